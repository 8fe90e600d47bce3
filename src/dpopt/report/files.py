"""Output files: all-or-nothing output folders and CSV tables.

:func:`atomic_output` makes a run all-or-nothing: files are written into a
temporary folder next to the destination and moved into place only when the
run finishes, so an interrupted run leaves no half-written report behind.
"""

from __future__ import annotations

import contextlib
import csv
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .._validation import can_write_into

__all__ = ["check_output_dir", "atomic_output", "written_files", "write_csv", "read_csv"]


def check_output_dir(out: str | os.PathLike) -> Path:
    """``out`` as a Path, or ValueError when no report folder can be made there.

    Called before an experiment starts computing, so that a bad ``out`` fails
    in a second rather than after the run: ``out`` must be an existing folder
    or a path whose nearest existing ancestor is a writable folder.
    """
    if out is None or str(out) == "":
        raise ValueError("out must be a folder path, got an empty value")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out: {str(out)!r} exists and is not a folder")
    ancestor = out if out.exists() else out.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ValueError(f"out: {str(ancestor)!r} is not a folder, so {str(out)!r} cannot be created")
    why = can_write_into(ancestor)
    if why is not None:
        raise ValueError(f"out: no permission to write into {str(ancestor)!r} ({why})")
    return out


def _make_parents(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing ancestors; return the ones created, deepest first."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir(exist_ok=True)
    return missing


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_output(out: str | os.PathLike):
    """Yield a temporary folder; on success its files appear in ``out``, on failure nothing does.

    When ``out`` does not exist yet, the temporary folder is made beside it and
    renamed to ``out`` in one step, so ``out`` exists only when the run has
    finished (an interrupted or failed run leaves no ``out`` and no temporary
    folder, and removes the parent folders it had to create).  When ``out`` is
    an existing folder, files it already holds that the run does not write are
    left alone; the files the run writes replace theirs one by one with
    :func:`os.replace` (atomic on one file system), the HTML report last, so
    that a report on disk implies its data is there too.
    """
    out = check_output_dir(out)
    created = _make_parents(out.parent)
    fresh = not out.exists()
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.dpopt-partial-", dir=out.parent if fresh else out))
    try:
        yield tmp
        if fresh:
            os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it private; a report folder is not
            try:
                os.rename(tmp, out)
                return
            except OSError:  # ``out`` appeared meanwhile and is not empty: merge into it
                out.mkdir(parents=True, exist_ok=True)
        _merge(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for folder in created:  # deepest first; only if still empty
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def _merge(tmp: Path, out: Path) -> None:
    names = sorted(p.relative_to(tmp) for p in tmp.rglob("*") if p.is_file())
    names.sort(key=lambda p: p.suffix == ".html")
    for name in names:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp / name, out / name)
    shutil.rmtree(tmp, ignore_errors=True)


def written_files(tmp: str | os.PathLike, out: str | os.PathLike) -> dict[str, Path]:
    """Every file of a finished :func:`atomic_output` folder: relative name → its final path under ``out``.

    Call it inside the ``with`` block (the files are still in ``tmp`` there).
    """
    tmp = Path(tmp)
    return {
        p.relative_to(tmp).as_posix(): Path(out) / p.relative_to(tmp) for p in sorted(tmp.rglob("*")) if p.is_file()
    }


def write_csv(path: str | os.PathLike, rows: Sequence[dict], columns: Sequence[str] | None = None) -> Path:
    """Write dict rows as CSV (columns default to the union of keys, in first-seen order)."""
    path = Path(path)
    if columns is None:
        columns = list(dict.fromkeys(k for row in rows for k in row))
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def read_csv(path: str | os.PathLike) -> list[dict]:
    with Path(path).open(newline="") as fh:
        return list(csv.DictReader(fh))

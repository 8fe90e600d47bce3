"""The layout every paper reproduction's report shares: what was run, verdict, figures, tables, files."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields, replace
from pathlib import Path

from .markup import Section, format_value, pre_html, table_html, write_report

__all__ = ["reproduce_command", "run_section", "files_html", "write_experiment_report"]


def reproduce_command(paper: str, config, *, quick, full, seed: int | None = None) -> str:
    """The ``dpopt reproduce`` command that reruns ``config``, or a note that it is a custom one.

    ``quick``/``full`` are the paper's preset configurations; a ``seed`` field of
    the configuration (where it has one) may differ from the preset's.
    """

    def seeded(preset):
        has_seed = seed is not None and any(f.name == "seed" for f in fields(preset))
        return replace(preset, seed=seed) if has_seed else preset

    flag = " --quick" if config == seeded(quick) else "" if config == seeded(full) else None
    if flag is None:
        return f"dpopt.experiments.{paper}.run(config=...)  # a custom configuration, listed below"
    return f"dpopt reproduce {paper}{flag}" + ("" if seed is None else f" --seed {seed}")


def run_section(*, command: str, config: Mapping, seconds: float, paragraphs: Iterable[str] = ()) -> Section:
    """What was run: the command, every configuration parameter, and the time it took."""
    rows = [{"parameter": k, "value": format_value(v) if isinstance(v, float) else str(v)} for k, v in config.items()]
    body = pre_html(command) + table_html(rows, caption="Configuration")
    return Section(
        "What was run", body, paragraphs=(*paragraphs, f"Computed in {seconds:.1f} s (wall clock).")
    )


def files_html(folder: str | os.PathLike, descriptions: Mapping[str, str] | None = None) -> str:
    """The data files beside the report (the report is drawn from them), with sizes."""
    descriptions = descriptions or {}
    folder = Path(folder)
    rows = []
    for p in sorted(folder.rglob("*")):
        name = p.relative_to(folder).as_posix()
        if not p.is_file() or p.suffix == ".html" or name.startswith("."):
            continue
        default = "a figure, embedded above" if p.suffix == ".png" else ""
        contents = descriptions.get(name, descriptions.get(p.parent.relative_to(folder).as_posix() + "/", default))
        rows.append({"file": name, "bytes": p.stat().st_size, "contents": contents})
    return table_html(rows)


def write_experiment_report(
    path: str | os.PathLike,
    title: str,
    *,
    run: Section,
    verdict: Section,
    figures: Section,
    summary: Section,
    data: Section,
    privacy: Section,
    extra: Sequence[Section] = (),
    files: Mapping[str, str] | None = None,
    subtitle: str = "",
) -> Path:
    """A paper reproduction's report, in the layout all three share.

    What was run → verdict on the paper's claims → figures → summary table →
    data → privacy guarantee → further tables (``extra``) → the files written
    beside the report (``files`` describes them).  Write the data files into the
    report's folder first: the Files section lists what is there.
    """
    path = Path(path)
    sections = [run, verdict, figures, summary, data, privacy, *extra]
    sections.append(Section("Files", files_html(path.parent, files), paragraphs=(
        "Written next to this report; the tables and figures above are drawn from them.",
    )))  # fmt: skip
    return write_report(path, title, sections, subtitle=subtitle)

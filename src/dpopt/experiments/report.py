"""Self-contained HTML reports and atomic output folders.

A report is one HTML file with its figures embedded (base64 PNG), written
beside the CSV/JSON files it was drawn from.  :func:`atomic_output` makes a
run all-or-nothing: files are written into a temporary folder next to the
destination and moved into place only when the run finishes, so an
interrupted run leaves no half-written report behind.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import html
import io
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path

import numpy as np

__all__ = [
    "atomic_output",
    "check_output_dir",
    "written_files",
    "Section",
    "write_report",
    "table_html",
    "privacy_html",
    "figure_html",
    "write_csv",
    "read_csv",
    "details_html",
    "list_html",
    "pre_html",
    "privacy_table_html",
    "privacy_section",
    "describe_notion",
    "describe_relation",
    "reproduce_command",
    "run_section",
    "figures_section",
    "files_html",
    "write_privacy_records",
    "write_experiment_report",
    "ReportOutline",
    "read_report",
]


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
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ValueError(f"out: no permission to write into {str(ancestor)!r}")
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


def _fmt(value) -> str:
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, float | np.floating):
        return "—" if math.isnan(value) else f"{value:.4g}"
    return str(value)


def table_html(rows: Sequence[dict], columns: Sequence[str] | None = None, caption: str = "") -> str:
    """An HTML table of dict rows (floats to 4 significant digits, NaN as —, booleans as yes/no)."""
    if not rows:
        return "<p><em>(no rows)</em></p>"
    columns = list(columns or dict.fromkeys(k for row in rows for k in row))
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_fmt(row.get(c, '')))}</td>" for c in columns) + "</tr>" for row in rows
    )
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def figure_html(path: str | os.PathLike, caption: str = "") -> str:
    """A PNG embedded as a data URI, so the report is one self-contained file."""
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
    alt = html.escape(caption or Path(path).stem)
    return f'<figure><img alt="{alt}" src="data:image/png;base64,{data}">{cap}</figure>'


def details_html(summary: str, body: str) -> str:
    """A collapsed block (long tables the reader opens on demand)."""
    return f"<details><summary>{html.escape(summary)}</summary>{body}</details>"


def pre_html(text: str) -> str:
    """Preformatted text (a terminal table)."""
    return f"<pre>{html.escape(text)}</pre>"


def list_html(items: Iterable[str]) -> str:
    return "<ul>" + "".join(f"<li>{html.escape(str(item))}</li>" for item in items) + "</ul>"


# -- privacy -----------------------------------------------------------------------------
#: Ledger notion → (the guarantee's name, the accountant that produced it and how).
NOTIONS = {
    "pure": (
        "pure ε-DP",
        "PureDPAccountant: sequential composition of pure ε-DP events, with amplification by "
        "subsampling where the method samples",
    ),
    "rdp": (
        "(ε, δ)-DP via Rényi DP",
        "RDPAccountant: Rényi DP composed over a grid of orders (with Poisson-subsampling amplification "
        "where the method samples), converted to (ε, δ) at the stated δ",
    ),
    "zcdp": (
        "(ε, δ)-DP via zero-concentrated DP",
        "ZCDPAccountant: ρ-zCDP composed additively, converted to (ε, δ) at the stated δ",
    ),
}
#: Ledger relation → what a neighbouring data set is.
RELATIONS = {
    "add_remove": "add/remove one record (data sets differing by one record's presence)",
    "replace_one": "replace one record (data sets of the same size differing in one record)",
}


def describe_notion(notion: str) -> str:
    """The accountant behind a ledger notion, in words."""
    if not notion or notion == "none":
        return "none (non-private reference)"
    name, how = NOTIONS.get(notion, (notion, ""))
    return f"{name} — {how}" if how else name


def describe_relation(relation: str) -> str:
    """A neighbouring relation in words (free-text relations such as a paper's adjacency pass through)."""
    return RELATIONS.get(relation, relation) if relation else "—"


def _guarantee_line(record: dict) -> str:
    if record.get("guarantee") == "none":
        return "none: a non-private reference"
    eps, delta = record.get("epsilon"), record.get("delta", 0.0)
    if record.get("notion") == "pure" or delta in (0, 0.0):
        return f"ε = {_fmt(eps)}-differential privacy (pure, δ = 0)"
    return f"(ε = {_fmt(eps)}, δ = {_fmt(delta)})-differential privacy"


def privacy_html(record: dict) -> str:
    """One guarantee: (ε, δ), the accountant and notion, neighbouring relation, kind and caveats."""
    from ..result import GUARANTEES

    kind = record.get("guarantee", "")
    items = [
        ("Guarantee", _guarantee_line(record)),
        ("Accountant / notion", describe_notion(record.get("notion", ""))),
        ("Neighbouring relation", describe_relation(record.get("relation", ""))),
        ("Kind of guarantee", f"{kind}: {GUARANTEES[kind]}" if kind in GUARANTEES else kind),
    ]
    events = record.get("events")
    if events is not None:
        items.append(("Privacy events charged", len(events) if isinstance(events, list | tuple) else events))
    if record.get("notes"):
        items.append(("Notes", record["notes"]))
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in items)
    return f'<table class="kv">{rows}</table>'


def privacy_table_html(records: Mapping[str, dict]) -> str:
    """Every method's guarantee in one table, then each method's caveats and what the terms mean.

    ``records`` maps a method name to a privacy record (:meth:`dpopt.result.DPResult.privacy_record`
    or a dict with the same keys; ``epsilon``/``delta`` may be text such as "the cell's ε").
    """
    from ..result import GUARANTEES

    rows, notes = [], []
    for method, rec in records.items():
        events = rec.get("events")
        rows.append({
            "method": method,
            "ε": rec.get("epsilon", ""),
            "δ": rec.get("delta", 0.0),
            "accountant": NOTIONS.get(rec.get("notion", ""), (rec.get("notion") or "none",))[0],
            "neighbouring relation": rec.get("relation", "") or "—",
            "kind": rec.get("guarantee", ""),
            "events": len(events) if isinstance(events, list | tuple) else ("" if events is None else events),
        })  # fmt: skip
        if rec.get("notes"):
            notes.append(f"{method}: {rec['notes']}")
    notions = dict.fromkeys(rec.get("notion", "") for rec in records.values())
    relations = dict.fromkeys(rec.get("relation", "") for rec in records.values() if rec.get("relation"))
    kinds = dict.fromkeys(rec.get("guarantee", "") for rec in records.values() if rec.get("guarantee"))
    legend = (
        [f"Accountant {NOTIONS[n][0]}: {NOTIONS[n][1]}." for n in notions if n in NOTIONS]
        + [f"Relation {r}: {RELATIONS[r]}." for r in relations if r in RELATIONS]
        + [f"Kind {k}: {GUARANTEES[k]}." for k in kinds if k in GUARANTEES]
    )
    body = table_html(rows)
    if notes:
        body += "<h3>Caveats recorded by the methods</h3>" + list_html(notes)
    return body + "<h3>What the columns mean</h3>" + list_html(legend)


def privacy_section(records: Mapping[str, dict], paragraphs: Iterable[str] = ()) -> Section:
    return Section("Privacy guarantee", privacy_table_html(records), paragraphs=tuple(paragraphs))


def write_privacy_records(folder: str | os.PathLike, records: Mapping[str, dict]) -> list[Path]:
    """One JSON file per method (``folder/<method>.json``): its privacy record with the event log.

    Each file is what ``dpopt account --events FILE`` reads, so a reader can re-derive ε from the events.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for method, record in records.items():
        path = folder / f"{method}.json"
        path.write_text(json.dumps(record, indent=1), encoding="utf-8")
        paths.append(path)
    return paths


@dataclass
class Section:
    """One headed part of a report: raw HTML built with the helpers above."""

    title: str
    body: str
    paragraphs: Iterable[str] = field(default_factory=tuple)

    def render(self) -> str:
        text = "".join(f"<p>{html.escape(p)}</p>" for p in self.paragraphs)
        return f"<section><h2>{html.escape(self.title)}</h2>{text}{self.body}</section>"


_STYLE = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em}
h2{font-size:1.25em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th{background:#f3f3f3}
table.kv th{text-align:left}
table.kv td{text-align:left}
caption{text-align:left;font-weight:600}
figure{margin:1em 0}
img{max-width:100%}
figcaption{font-size:.9em;color:#555}
.meta{color:#666;font-size:.85em}
pre{background:#f6f6f6;padding:.5em .8em;overflow-x:auto;font-size:.85em}
details{margin:.6em 0}
summary{cursor:pointer;color:#225}
h3{font-size:1.05em}
"""


def pyplot():
    """``matplotlib.pyplot`` on the headless Agg backend: report figures are only written to files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def log_axis_at(ax, values) -> None:
    """Log-scaled x axis labelled exactly at the grid values (no minor-tick labels)."""
    from matplotlib.ticker import FixedLocator, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(values))
    ax.set_xticklabels([f"{v:g}" for v in values])
    ax.xaxis.set_minor_formatter(NullFormatter())


def save_figure(fig, path: Path, *, dpi: int, rect=None) -> Path:
    """Lay out ``fig`` (inside ``rect`` when given), write it to ``path`` as PNG and close it."""
    if rect is None:
        fig.tight_layout()
    else:
        fig.tight_layout(rect=rect)
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return path


def write_report(path: str | os.PathLike, title: str, sections: Sequence[Section], *, subtitle: str = "") -> Path:
    """Write a self-contained HTML report."""
    path = Path(path)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    buf = io.StringIO()
    buf.write(f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>")
    buf.write(f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>")
    if subtitle:
        buf.write(f"<p>{html.escape(subtitle)}</p>")
    from .. import __version__

    buf.write(f"<p class='meta'>dpopt {__version__} · generated {stamp}</p>")
    for section in sections:
        buf.write(section.render())
    buf.write("</body></html>\n")
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


# -- the common layout of the paper reproductions ------------------------------------------
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
    rows = [{"parameter": k, "value": _fmt(v) if isinstance(v, float) else str(v)} for k, v in config.items()]
    body = pre_html(command) + table_html(rows, caption="Configuration")
    return Section(
        "What was run", body, paragraphs=(*paragraphs, f"Computed in {seconds:.1f} s (wall clock).")
    )


def figures_section(figures: Mapping[str, os.PathLike], paragraphs: Iterable[str] = ()) -> Section:
    """Every figure, embedded, with its caption."""
    return Section(
        "Figures", "".join(figure_html(p, caption) for caption, p in figures.items()), paragraphs=tuple(paragraphs)
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


# -- reading a report back -----------------------------------------------------------------
@dataclass
class ReportOutline:
    """What a report holds, read back from its HTML (for checks in CI and tests)."""

    title: str
    headings: list[str]
    figures: list[tuple[str, bytes]]  # (alt text, decoded PNG bytes)
    tables: list[list[list[str]]]  # per table: rows of cell texts, header row first
    text: str  # the visible text


class _OutlineParser(HTMLParser):
    _VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.title = ""
        self.headings: list[str] = []
        self.figures: list[tuple[str, bytes]] = []
        self.tables: list[list[list[str]]] = []
        self.text: list[str] = []
        self._heading: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            src = attrs.get("src", "")
            prefix = "data:image/png;base64,"
            if not src.startswith(prefix):
                raise ValueError(f"figure {attrs.get('alt')!r} is not an embedded PNG")
            self.figures.append((attrs.get("alt", ""), base64.b64decode(src[len(prefix):], validate=True)))
        if tag in self._VOID:
            return
        self.stack.append(tag)
        if tag == "h2":
            self._heading = []
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in self._VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            raise ValueError(f"malformed HTML: </{tag}> closes <{self.stack[-1] if self.stack else 'nothing'}>")
        self.stack.pop()
        if tag == "h2" and self._heading is not None:
            self.headings.append("".join(self._heading).strip())
            self._heading = None
        elif tag in ("td", "th") and self._cell is not None:
            if self.tables and self.tables[-1]:
                self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self.stack and self.stack[-1] in ("style", "script"):
            return
        if self.stack and self.stack[-1] == "title":
            self.title += data
        for sink in (self._heading, self._cell, self.text):
            if sink is not None:
                sink.append(data)


def read_report(path: str | os.PathLike) -> ReportOutline:
    """Parse a written report; ValueError if its HTML is malformed or a figure is not an embedded PNG."""
    parser = _OutlineParser()
    parser.feed(Path(path).read_text(encoding="utf-8"))
    parser.close()
    if parser.stack:
        raise ValueError(f"malformed HTML: <{parser.stack[-1]}> is never closed")
    return ReportOutline(
        parser.title.strip(), parser.headings, parser.figures, parser.tables, " ".join("".join(parser.text).split())
    )

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
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

__all__ = [
    "atomic_output",
    "Section",
    "write_report",
    "table_html",
    "privacy_html",
    "figure_html",
    "write_csv",
    "read_csv",
]


@contextlib.contextmanager
def atomic_output(out: str | os.PathLike):
    """Yield a temporary folder; on success move its files into ``out``, on failure delete it.

    Files already in ``out`` that the run does not write are left alone; files
    it writes are replaced one by one with :func:`os.replace` (atomic on one
    file system), with the report written last by :func:`write_report`'s
    callers.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".dpopt-partial-", dir=out))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    names = sorted(p.relative_to(tmp) for p in tmp.rglob("*") if p.is_file())
    # The HTML report goes last so that a report on disk implies its data is there too.
    names.sort(key=lambda p: p.suffix == ".html")
    for name in names:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp / name, out / name)
    shutil.rmtree(tmp, ignore_errors=True)


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
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def table_html(rows: Sequence[dict], columns: Sequence[str] | None = None, caption: str = "") -> str:
    """An HTML table of dict rows."""
    if not rows:
        return "<p><em>(no rows)</em></p>"
    columns = list(columns or dict.fromkeys(k for row in rows for k in row))
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
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


def privacy_html(record: dict) -> str:
    """The privacy guarantee: (ε, δ), notion, neighbouring relation, accountant and caveats."""
    items = [
        (
            "Guarantee",
            f"(ε = {_fmt(record.get('epsilon'))}, δ = {_fmt(record.get('delta', 0.0))})-differential privacy",
        ),
        ("Accountant / notion", record.get("notion", "")),
        ("Neighbouring relation", record.get("relation", "")),
        ("Kind of guarantee", record.get("guarantee", "")),
    ]
    if record.get("notes"):
        items.append(("Notes", record["notes"]))
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in items)
    return f'<table class="kv">{rows}</table>'


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
"""


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

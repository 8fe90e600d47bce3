"""HTML building blocks of a self-contained report: tables, embedded figures, sections, the page."""

from __future__ import annotations

import base64
import html
import io
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

__all__ = [
    "format_value",
    "table_html",
    "figure_html",
    "details_html",
    "pre_html",
    "list_html",
    "Section",
    "write_report",
]


def format_value(value) -> str:
    """A table cell: floats to 4 significant digits, NaN as —, booleans as yes/no."""
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
        "<tr>" + "".join(f"<td>{html.escape(format_value(row.get(c, '')))}</td>" for c in columns) + "</tr>"
        for row in rows
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

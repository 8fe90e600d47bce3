"""Reading a written report back (for checks in CI and tests)."""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

__all__ = ["ReportOutline", "read_report"]


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

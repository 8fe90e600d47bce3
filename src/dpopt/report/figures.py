"""Report figures: matplotlib on a headless backend, one way to save, and the Figures section."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from .._validation import require
from .markup import Section, figure_html

__all__ = ["pyplot", "log_axis_at", "save_figure", "figures_section"]


def pyplot():
    """``matplotlib.pyplot`` on the headless Agg backend: report figures are only written to files."""
    require("writing figures", ("matplotlib",))
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


def figures_section(figures: Mapping[str, os.PathLike], paragraphs: Iterable[str] = ()) -> Section:
    """Every figure, embedded, with its caption."""
    return Section(
        "Figures", "".join(figure_html(p, caption) for caption, p in figures.items()), paragraphs=tuple(paragraphs)
    )

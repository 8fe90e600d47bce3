"""Reports: all-or-nothing output folders, self-contained HTML, figures and privacy records.

One module per concern: :mod:`~dpopt.report.files` (atomic output folders,
CSV), :mod:`~dpopt.report.markup` (HTML blocks and the page),
:mod:`~dpopt.report.figures` (matplotlib, headless), :mod:`~dpopt.report.privacy`
(guarantees in words, event logs on disk), :mod:`~dpopt.report.layout` (the
sections every paper reproduction shares) and :mod:`~dpopt.report.outline`
(reading a report back).  A report is one HTML file with its figures embedded
(base64 PNG), written beside the CSV/JSON files it was drawn from.

This package formats what it is given; it computes nothing from private data.
"""

from .figures import figures_section, log_axis_at, pyplot, save_figure
from .files import atomic_output, check_output_dir, read_csv, write_csv, written_files
from .layout import files_html, reproduce_command, run_section, write_experiment_report
from .markup import Section, details_html, figure_html, format_value, list_html, pre_html, table_html, write_report
from .outline import ReportOutline, read_report
from .privacy import (
    NOTIONS,
    RELATIONS,
    describe_notion,
    describe_relation,
    privacy_html,
    privacy_section,
    privacy_table_html,
    write_privacy_records,
)

__all__ = [
    "atomic_output",
    "check_output_dir",
    "written_files",
    "write_csv",
    "read_csv",
    "Section",
    "write_report",
    "format_value",
    "table_html",
    "figure_html",
    "details_html",
    "list_html",
    "pre_html",
    "NOTIONS",
    "RELATIONS",
    "privacy_html",
    "privacy_table_html",
    "privacy_section",
    "describe_notion",
    "describe_relation",
    "write_privacy_records",
    "pyplot",
    "log_axis_at",
    "save_figure",
    "figures_section",
    "reproduce_command",
    "run_section",
    "files_html",
    "write_experiment_report",
    "ReportOutline",
    "read_report",
]

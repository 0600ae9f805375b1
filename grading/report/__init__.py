"""The §7 report: run outcomes summed per task, arm, model and prompt style (sums), rates with bootstrap
intervals (stats), contrasts and their precision (contrasts, power), judge agreement (agreement), the
warnings, the report model (models, built by build), and its renderings: text and CSV (render), SVG
charts (charts), one HTML file (html); label rows (label_rows) and reviewers' agreement (reviewers). files
reads metrics.json, labels and cutoffs from disk. This interface is what the app and a library user take
from the report: the package root gives it whole (the command line imports its own helpers directly)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from grading.lazy import lazy_interface

# module -> the public names it defines (grading/__init__ reads them from here)
_PUBLIC: dict[str, tuple[str, ...]] = {
    "grading.report.agreement": ("judge_agreement",),
    "grading.report.build": ("build_report", "report_from_sums", "report_label_target"),
    "grading.report.charts": (
        "blocker_histogram",
        "forest_plot",
        "rates_chart",
        "standalone",
    ),
    "grading.report.files": (
        "MetricsDetails",
        "MetricsFile",
        "MetricsJudge",
        "StrictMetricsFile",
        "parse_date",
        "read_metrics",
    ),
    "grading.report.html": ("label_target_text", "render_report_html"),
    "grading.report.label_rows": (
        "LABEL_FIELDS",
        "MAX_LABEL_FILE_BYTES",
        "LabelRow",
        "LabelRowsError",
        "human_mergeable_from_items",
        "label_format",
        "read_label_rows",
        "run_inclusion_probability",
        "settled_verdict",
        "write_label_rows",
    ),
    "grading.report.models": (
        "Cell",
        "Contrast",
        "DEFAULT_BOOTSTRAP",
        "DEFAULT_SEED",
        "Disagreement",
        "GradedRun",
        "JudgeVerdicts",
        "LabelTarget",
        "Report",
        "TaskRow",
        "grade_metrics",
    ),
    "grading.report.provenance": (
        "Provenance",
        "ProvenanceJudge",
        "TaskRubric",
        "code_version",
        "download_name",
        "read_git_commit",
        "report_provenance",
    ),
    "grading.report.render": (
        "INTERVALS_TEXT",
        "METRIC_NAMES",
        "ContrastRow",
        "Notes",
        "cell_notes",
        "contrast_cell",
        "contrast_rows",
        "contrast_table",
        "no_interval_reason",
        "contrast_estimate",
        "contrast_label",
        "corrected_contrast_label",
        "corrected_contrast_text",
        "estimate_note",
        "left_out_text",
        "metric_lines",
        "precision_text",
        "report_csv",
    ),
    "grading.report.reviewers": ("ReviewerAgreement", "reviewer_agreement"),
    "grading.report.rows": (
        "ItemRow",
        "RunRow",
        "item_rows",
        "read_rows",
        "rows_file",
        "rows_text",
        "run_row",
    ),
    "grading.report.stats": ("Estimate",),
    "grading.report.sums": ("JudgeCost", "PartSums", "ReportSums", "VerdictGroup", "run_disagreements"),
    "grading.report.warnings": ("REPEATED_WARNINGS", "warning_kind"),
}
__all__, _MODULE_OF, __getattr__, __dir__ = lazy_interface(__name__, _PUBLIC, globals())

if TYPE_CHECKING:
    from grading.report.agreement import judge_agreement as judge_agreement
    from grading.report.build import build_report as build_report
    from grading.report.build import report_from_sums as report_from_sums
    from grading.report.build import report_label_target as report_label_target
    from grading.report.charts import blocker_histogram as blocker_histogram
    from grading.report.charts import forest_plot as forest_plot
    from grading.report.charts import rates_chart as rates_chart
    from grading.report.charts import standalone as standalone
    from grading.report.files import MetricsDetails as MetricsDetails
    from grading.report.files import MetricsFile as MetricsFile
    from grading.report.files import MetricsJudge as MetricsJudge
    from grading.report.files import StrictMetricsFile as StrictMetricsFile
    from grading.report.files import parse_date as parse_date
    from grading.report.files import read_metrics as read_metrics
    from grading.report.html import label_target_text as label_target_text
    from grading.report.html import render_report_html as render_report_html
    from grading.report.label_rows import LABEL_FIELDS as LABEL_FIELDS
    from grading.report.label_rows import MAX_LABEL_FILE_BYTES as MAX_LABEL_FILE_BYTES
    from grading.report.label_rows import LabelRow as LabelRow
    from grading.report.label_rows import LabelRowsError as LabelRowsError
    from grading.report.label_rows import human_mergeable_from_items as human_mergeable_from_items
    from grading.report.label_rows import label_format as label_format
    from grading.report.label_rows import read_label_rows as read_label_rows
    from grading.report.label_rows import run_inclusion_probability as run_inclusion_probability
    from grading.report.label_rows import settled_verdict as settled_verdict
    from grading.report.label_rows import write_label_rows as write_label_rows
    from grading.report.models import DEFAULT_BOOTSTRAP as DEFAULT_BOOTSTRAP
    from grading.report.models import DEFAULT_SEED as DEFAULT_SEED
    from grading.report.models import Cell as Cell
    from grading.report.models import Contrast as Contrast
    from grading.report.models import Disagreement as Disagreement
    from grading.report.models import GradedRun as GradedRun
    from grading.report.models import JudgeVerdicts as JudgeVerdicts
    from grading.report.models import LabelTarget as LabelTarget
    from grading.report.models import Report as Report
    from grading.report.models import TaskRow as TaskRow
    from grading.report.models import grade_metrics as grade_metrics
    from grading.report.provenance import Provenance as Provenance
    from grading.report.provenance import ProvenanceJudge as ProvenanceJudge
    from grading.report.provenance import TaskRubric as TaskRubric
    from grading.report.provenance import code_version as code_version
    from grading.report.provenance import download_name as download_name
    from grading.report.provenance import read_git_commit as read_git_commit
    from grading.report.provenance import report_provenance as report_provenance
    from grading.report.render import INTERVALS_TEXT as INTERVALS_TEXT
    from grading.report.render import METRIC_NAMES as METRIC_NAMES
    from grading.report.render import ContrastRow as ContrastRow
    from grading.report.render import Notes as Notes
    from grading.report.render import cell_notes as cell_notes
    from grading.report.render import contrast_cell as contrast_cell
    from grading.report.render import contrast_estimate as contrast_estimate
    from grading.report.render import contrast_label as contrast_label
    from grading.report.render import contrast_rows as contrast_rows
    from grading.report.render import contrast_table as contrast_table
    from grading.report.render import corrected_contrast_label as corrected_contrast_label
    from grading.report.render import corrected_contrast_text as corrected_contrast_text
    from grading.report.render import estimate_note as estimate_note
    from grading.report.render import left_out_text as left_out_text
    from grading.report.render import metric_lines as metric_lines
    from grading.report.render import no_interval_reason as no_interval_reason
    from grading.report.render import precision_text as precision_text
    from grading.report.render import report_csv as report_csv
    from grading.report.reviewers import ReviewerAgreement as ReviewerAgreement
    from grading.report.reviewers import reviewer_agreement as reviewer_agreement
    from grading.report.rows import ItemRow as ItemRow
    from grading.report.rows import RunRow as RunRow
    from grading.report.rows import item_rows as item_rows
    from grading.report.rows import read_rows as read_rows
    from grading.report.rows import rows_file as rows_file
    from grading.report.rows import rows_text as rows_text
    from grading.report.rows import run_row as run_row
    from grading.report.stats import Estimate as Estimate
    from grading.report.sums import JudgeCost as JudgeCost
    from grading.report.sums import PartSums as PartSums
    from grading.report.sums import ReportSums as ReportSums
    from grading.report.sums import VerdictGroup as VerdictGroup
    from grading.report.sums import run_disagreements as run_disagreements
    from grading.report.warnings import REPEATED_WARNINGS as REPEATED_WARNINGS
    from grading.report.warnings import warning_kind as warning_kind

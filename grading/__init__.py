"""Mergeability grading: rubric checks, a fenced diff-only judge, outcomes and admission.

The package root is the public API: the Django app imports grading only from here (a test walks
``rubrics_app/`` for it), and the ``rubric`` command's path-based functions are wrappers over the same calls.
Names load on first use (PEP 562), so ``rubric --help`` does not import the judge backends or the report.

This package never imports Django (tests/grading/test_no_django.py proves it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# module -> its public names; tests/grading/test_public_api.py checks them against the imports below.
_PUBLIC: dict[str, tuple[str, ...]] = {
    "grading.admission": (
        "SUITE_KINDS",
        "check_admission",
        "check_task",
        "inject_reviewer_comment",
        "teach_scripted_judge",
    ),
    "grading.admission_store": ("AdmissionReport", "AdmissionRow"),
    "grading.agreement": ("judge_agreement",),
    "grading.atomic": ("write_atomic",),
    "grading.citations": ("Citation", "parse_citations"),
    "grading.basetree": ("BaseTree",),
    "grading.commands.judge": ("printable",),
    "grading.contrasts": ("Contrast",),
    "grading.diffs": ("read_diff",),
    "grading.draft": (
        "ALT_DIFF_PATH",
        "DEFAULT_GUIDANCE_GLOBS",
        "Draft",
        "DraftError",
        "GitHubError",
        "GitHubSource",
        "LAZY_DIFF_PATH",
        "PullRequest",
        "build_draft_input",
        "check_draft",
        "draft_rubric",
        "make_drafter",
        "parse_pr_export",
        "render_draft_request",
    ),
    "grading.draft.pr": ("parse_github_repository",),
    "grading.errors": (
        "InputError",
        "InputErrors",
        "Problem",
    ),
    "grading.git": ("NO_COMMANDS_CONFIG", "Git", "GitError", "GitResult", "commit_on_new_branch"),
    "grading.globs": ("glob_error",),
    "grading.injection_corpus": ("PAYLOAD_KINDS",),
    "grading.integrity": (
        "TESTS_LIST_ERROR_NAME",
        "TESTS_LIST_NAME",
        "listing_error_text",
        "read_listing_error",
    ),
    "grading.judge.backend": ("Backend", "Decoding"),
    "grading.judge.batching": ("ThreadBatchBackend",),
    "grading.judge.cache": (
        "CachedVerdicts",
        "MemoryCache",
    ),
    "grading.judge.cost": (
        "PriceTable",
        "load_price_table",
    ),
    "grading.judge.limits": (
        "Budget",
        "BudgetExceeded",
        "Limit",
        "LimitedBackend",
        "ProviderLimit",
        "ProviderLimitSpec",
        "SharedProviderLimit",
        "parse_provider_limits",
        "provider_of",
    ),
    "grading.judge.models": ("JudgeResult",),
    "grading.judge.runner": ("JudgeSettings",),
    "grading.judge.specs": (
        "JudgeSpec",
        "check_second_judge",
        "judge_family",
        "make_backend",
        "parse_decoding",
        "second_judge_problem",
    ),
    "grading.judge.scripted": ("ScriptedFile", "ScriptedVerdict", "load_scripted"),
    "grading.judge.tree": ("supports_tree",),
    "grading.loaders": (
        "load_grade",
        "load_manifest",
        "load_run",
        "parse_grade",
        "parse_rubric",
        "parse_run_record",
        "validation_messages",
    ),
    "grading.mutants_judging": (
        "MutantReport",
        "MutantRow",
        "check_mutants",
        "judge_mutants",
    ),
    "grading.path_lists": ("parse_ignored_created", "parse_path_list", "read_path_list"),
    "grading.power": ("LabelTarget",),
    "grading.run": ("Run", "TaskFiles", "make_run", "make_task_files", "read_run", "read_task_files"),
    "grading.outcome": (
        "RunDetails",
        "RunMetrics",
        "grade",
        "grade_run",
    ),
    "grading.report": (
        "Cell",
        "DEFAULT_BOOTSTRAP",
        "DEFAULT_SEED",
        "Disagreement",
        "GradedRun",
        "JudgeVerdicts",
        "REPEATED_WARNINGS",
        "Report",
        "TaskRow",
        "build_report",
        "grade_metrics",
        "report_from_sums",
        "report_label_target",
        "warning_kind",
    ),
    "grading.report_sums": (
        "JudgeCost",
        "PartSums",
        "ReportSums",
        "VerdictGroup",
        "run_disagreements",
    ),
    "grading.report_charts": (
        "blocker_histogram",
        "forest_plot",
        "no_interval_reason",
        "rates_chart",
        "standalone",
    ),
    "grading.report_files": (
        "MetricsDetails",
        "MetricsFile",
        "MetricsJudge",
        "StrictMetricsFile",
        "parse_date",
        "read_metrics",
    ),
    "grading.report_html": ("label_target_text", "render_report_html"),
    "grading.report_render": (
        "INTERVALS_TEXT",
        "METRIC_NAMES",
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
    "grading.report_stats": ("Estimate",),
    "grading.schema": (
        "GradeJson",
        "LazyCalibration",
        "MAX_BLOCKERS",
        "MAX_NON_BLOCKERS",
        "MAX_WEIGHT",
        "MAX_RUN_INT",
        "MIN_BLOCKERS",
        "MIN_NON_BLOCKERS",
        "RUBRIC_SCHEMA",
        "Rubric",
        "RunRecord",
        "SWE_BENCH_SOURCE",
        "TaskSpec",
        "TestsConfig",
        "harness_infra_failure",
    ),
    "grading.strict_json": (
        "MAX_INPUT_BYTES",
        "open_input_file",
        "parse_json",
        "read_input_bytes",
        "read_json",
    ),
    "grading.workspace": ("GIT_DIR_CHANGES_NAME",),
}
_MODULE_OF = {name: module for module, names in _PUBLIC.items() for name in names}

__all__ = sorted(_MODULE_OF)

if TYPE_CHECKING:
    from grading.admission import SUITE_KINDS as SUITE_KINDS
    from grading.admission import check_admission as check_admission
    from grading.admission import check_task as check_task
    from grading.admission import inject_reviewer_comment as inject_reviewer_comment
    from grading.admission import teach_scripted_judge as teach_scripted_judge
    from grading.admission_store import AdmissionReport as AdmissionReport
    from grading.admission_store import AdmissionRow as AdmissionRow
    from grading.agreement import judge_agreement as judge_agreement
    from grading.atomic import write_atomic as write_atomic
    from grading.basetree import BaseTree as BaseTree
    from grading.citations import Citation as Citation
    from grading.citations import parse_citations as parse_citations
    from grading.commands.judge import printable as printable
    from grading.contrasts import Contrast as Contrast
    from grading.diffs import read_diff as read_diff
    from grading.draft import ALT_DIFF_PATH as ALT_DIFF_PATH
    from grading.draft import DEFAULT_GUIDANCE_GLOBS as DEFAULT_GUIDANCE_GLOBS
    from grading.draft import LAZY_DIFF_PATH as LAZY_DIFF_PATH
    from grading.draft import Draft as Draft
    from grading.draft import DraftError as DraftError
    from grading.draft import GitHubError as GitHubError
    from grading.draft import GitHubSource as GitHubSource
    from grading.draft import PullRequest as PullRequest
    from grading.draft import build_draft_input as build_draft_input
    from grading.draft import check_draft as check_draft
    from grading.draft import draft_rubric as draft_rubric
    from grading.draft import make_drafter as make_drafter
    from grading.draft import parse_pr_export as parse_pr_export
    from grading.draft import render_draft_request as render_draft_request
    from grading.draft.pr import parse_github_repository as parse_github_repository
    from grading.errors import InputError as InputError
    from grading.errors import InputErrors as InputErrors
    from grading.errors import Problem as Problem
    from grading.git import NO_COMMANDS_CONFIG as NO_COMMANDS_CONFIG
    from grading.git import Git as Git
    from grading.git import GitError as GitError
    from grading.git import GitResult as GitResult
    from grading.git import commit_on_new_branch as commit_on_new_branch
    from grading.globs import glob_error as glob_error
    from grading.injection_corpus import PAYLOAD_KINDS as PAYLOAD_KINDS
    from grading.integrity import TESTS_LIST_ERROR_NAME as TESTS_LIST_ERROR_NAME
    from grading.integrity import TESTS_LIST_NAME as TESTS_LIST_NAME
    from grading.integrity import listing_error_text as listing_error_text
    from grading.integrity import read_listing_error as read_listing_error
    from grading.judge.backend import Backend as Backend
    from grading.judge.backend import Decoding as Decoding
    from grading.judge.batching import ThreadBatchBackend as ThreadBatchBackend
    from grading.judge.cache import CachedVerdicts as CachedVerdicts
    from grading.judge.cache import MemoryCache as MemoryCache
    from grading.judge.cost import PriceTable as PriceTable
    from grading.judge.cost import load_price_table as load_price_table
    from grading.judge.limits import Budget as Budget
    from grading.judge.limits import BudgetExceeded as BudgetExceeded
    from grading.judge.limits import Limit as Limit
    from grading.judge.limits import LimitedBackend as LimitedBackend
    from grading.judge.limits import ProviderLimit as ProviderLimit
    from grading.judge.limits import ProviderLimitSpec as ProviderLimitSpec
    from grading.judge.limits import SharedProviderLimit as SharedProviderLimit
    from grading.judge.limits import parse_provider_limits as parse_provider_limits
    from grading.judge.limits import provider_of as provider_of
    from grading.judge.models import JudgeResult as JudgeResult
    from grading.judge.runner import JudgeSettings as JudgeSettings
    from grading.judge.scripted import ScriptedFile as ScriptedFile
    from grading.judge.scripted import ScriptedVerdict as ScriptedVerdict
    from grading.judge.scripted import load_scripted as load_scripted
    from grading.judge.specs import JudgeSpec as JudgeSpec
    from grading.judge.specs import check_second_judge as check_second_judge
    from grading.judge.specs import judge_family as judge_family
    from grading.judge.specs import make_backend as make_backend
    from grading.judge.specs import parse_decoding as parse_decoding
    from grading.judge.specs import second_judge_problem as second_judge_problem
    from grading.judge.tree import supports_tree as supports_tree
    from grading.loaders import load_grade as load_grade
    from grading.loaders import load_manifest as load_manifest
    from grading.loaders import load_run as load_run
    from grading.loaders import parse_grade as parse_grade
    from grading.loaders import parse_rubric as parse_rubric
    from grading.loaders import parse_run_record as parse_run_record
    from grading.loaders import validation_messages as validation_messages
    from grading.mutants_judging import MutantReport as MutantReport
    from grading.mutants_judging import MutantRow as MutantRow
    from grading.mutants_judging import check_mutants as check_mutants
    from grading.mutants_judging import judge_mutants as judge_mutants
    from grading.outcome import RunDetails as RunDetails
    from grading.outcome import RunMetrics as RunMetrics
    from grading.outcome import grade as grade
    from grading.outcome import grade_run as grade_run
    from grading.path_lists import parse_ignored_created as parse_ignored_created
    from grading.path_lists import parse_path_list as parse_path_list
    from grading.path_lists import read_path_list as read_path_list
    from grading.power import LabelTarget as LabelTarget
    from grading.report import DEFAULT_BOOTSTRAP as DEFAULT_BOOTSTRAP
    from grading.report import DEFAULT_SEED as DEFAULT_SEED
    from grading.report import REPEATED_WARNINGS as REPEATED_WARNINGS
    from grading.report import Cell as Cell
    from grading.report import Disagreement as Disagreement
    from grading.report import GradedRun as GradedRun
    from grading.report import JudgeVerdicts as JudgeVerdicts
    from grading.report import Report as Report
    from grading.report import TaskRow as TaskRow
    from grading.report import build_report as build_report
    from grading.report import grade_metrics as grade_metrics
    from grading.report import report_from_sums as report_from_sums
    from grading.report import report_label_target as report_label_target
    from grading.report import warning_kind as warning_kind
    from grading.report_charts import blocker_histogram as blocker_histogram
    from grading.report_charts import forest_plot as forest_plot
    from grading.report_charts import no_interval_reason as no_interval_reason
    from grading.report_charts import rates_chart as rates_chart
    from grading.report_charts import standalone as standalone
    from grading.report_files import MetricsDetails as MetricsDetails
    from grading.report_files import MetricsFile as MetricsFile
    from grading.report_files import MetricsJudge as MetricsJudge
    from grading.report_files import StrictMetricsFile as StrictMetricsFile
    from grading.report_files import parse_date as parse_date
    from grading.report_files import read_metrics as read_metrics
    from grading.report_html import label_target_text as label_target_text
    from grading.report_html import render_report_html as render_report_html
    from grading.report_render import INTERVALS_TEXT as INTERVALS_TEXT
    from grading.report_render import METRIC_NAMES as METRIC_NAMES
    from grading.report_render import contrast_estimate as contrast_estimate
    from grading.report_render import contrast_label as contrast_label
    from grading.report_render import corrected_contrast_label as corrected_contrast_label
    from grading.report_render import corrected_contrast_text as corrected_contrast_text
    from grading.report_render import estimate_note as estimate_note
    from grading.report_render import left_out_text as left_out_text
    from grading.report_render import metric_lines as metric_lines
    from grading.report_render import precision_text as precision_text
    from grading.report_render import report_csv as report_csv
    from grading.report_stats import Estimate as Estimate
    from grading.report_sums import JudgeCost as JudgeCost
    from grading.report_sums import PartSums as PartSums
    from grading.report_sums import ReportSums as ReportSums
    from grading.report_sums import VerdictGroup as VerdictGroup
    from grading.report_sums import run_disagreements as run_disagreements
    from grading.run import Run as Run
    from grading.run import TaskFiles as TaskFiles
    from grading.run import make_run as make_run
    from grading.run import make_task_files as make_task_files
    from grading.run import read_run as read_run
    from grading.run import read_task_files as read_task_files
    from grading.schema import MAX_BLOCKERS as MAX_BLOCKERS
    from grading.schema import MAX_NON_BLOCKERS as MAX_NON_BLOCKERS
    from grading.schema import MAX_RUN_INT as MAX_RUN_INT
    from grading.schema import MAX_WEIGHT as MAX_WEIGHT
    from grading.schema import MIN_BLOCKERS as MIN_BLOCKERS
    from grading.schema import MIN_NON_BLOCKERS as MIN_NON_BLOCKERS
    from grading.schema import RUBRIC_SCHEMA as RUBRIC_SCHEMA
    from grading.schema import SWE_BENCH_SOURCE as SWE_BENCH_SOURCE
    from grading.schema import GradeJson as GradeJson
    from grading.schema import LazyCalibration as LazyCalibration
    from grading.schema import Rubric as Rubric
    from grading.schema import RunRecord as RunRecord
    from grading.schema import TaskSpec as TaskSpec
    from grading.schema import TestsConfig as TestsConfig
    from grading.schema import harness_infra_failure as harness_infra_failure
    from grading.strict_json import MAX_INPUT_BYTES as MAX_INPUT_BYTES
    from grading.strict_json import open_input_file as open_input_file
    from grading.strict_json import parse_json as parse_json
    from grading.strict_json import read_input_bytes as read_input_bytes
    from grading.strict_json import read_json as read_json
    from grading.workspace import GIT_DIR_CHANGES_NAME as GIT_DIR_CHANGES_NAME


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'grading' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

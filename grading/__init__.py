"""Mergeability grading: rubric checks, a fenced diff-only judge, outcomes and admission.

The package root is the public API: the Django app imports grading only from here (a test walks
``rubrics_app/`` for it), and a library user finds here what grading a run, admitting a rubric, judging,
drafting and reporting take and return. The ``rubric`` command (grading.cli) calls the subpackages
directly; a name only it uses is not listed here. Names load on first use (PEP 562, as
grading.lazy does for the subpackages), so ``import grading`` loads none of its modules.

This package never imports Django (tests/grading/test_no_django.py proves it).
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: `import grading` starts every command

__version__ = "0.1.0"

# module -> the public names it defines (tests/grading/test_public_api.py checks them)
_PUBLIC: dict[str, tuple[str, ...]] = {
    "grading.admission.check": (
        "SUITE_KINDS",
        "check_admission",
        "inject_reviewer_comment",
        "teach_scripted_judge",
    ),
    "grading.admission.corpus": ("PAYLOAD_KINDS",),
    "grading.admission.store": ("AdmissionReport", "AdmissionRow"),
    "grading.atomic": ("write_atomic", "write_new"),
    "grading.basetree": ("BaseTree",),
    "grading.checks.outcome": ("RunDetails", "RunMetrics", "grade", "grade_run"),
    "grading.checks.run": ("Run", "LoadedTask", "make_run", "make_task_files", "read_run", "read_task_files"),
    "grading.citations": ("Citation", "parse_citations"),
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
    "grading.errors": ("InputError", "InputErrors", "Problem", "printable"),
    "grading.git": ("Git", "GitError", "GitResult", "NO_COMMANDS_CONFIG", "commit_on_new_branch"),
    "grading.git_push": ("Remote", "parse_remote", "push_branch"),
    "grading.github_pulls": ("OpenedPullRequest", "open_pull_request"),
    "grading.globs": ("glob_error",),
    "grading.judge.backend": ("Backend", "Decoding"),
    "grading.judge.batching": ("ThreadBatchBackend",),
    "grading.judge.cache": ("CachedVerdicts", "MemoryCache"),
    "grading.judge.cost": ("PriceTable", "load_price_table"),
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
    "grading.judge.scripted": ("ScriptedFile", "ScriptedVerdict", "load_scripted"),
    "grading.judge.specs": (
        "JudgeSpec",
        "check_second_judge",
        "judge_family",
        "make_backend",
        "parse_decoding",
        "second_judge_problem",
    ),
    "grading.judge.tree": ("supports_tree",),
    "grading.loaders": (
        "load_manifest",
        "parse_grade",
        "parse_rubric",
        "parse_run_record",
        "validation_messages",
    ),
    "grading.mutants.judging": ("MutantReport", "MutantRow", "judge_mutants"),
    "grading.path_lists": ("parse_ignored_created", "parse_path_list", "read_path_list"),
    "grading.run_files": (
        "GIT_DIR_CHANGES_NAME",
        "TESTS_LIST_ERROR_NAME",
        "TESTS_LIST_NAME",
        "listing_error_text",
        "read_listing_error",
    ),
    "grading.schema": (
        "GradeJson",
        "LazyCalibration",
        "MAX_BLOCKERS",
        "MAX_NON_BLOCKERS",
        "MAX_RUN_INT",
        "MAX_WEIGHT",
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
}
# Packages whose whole interface the root gives too. Their names are listed once, in the package's own
# ``__init__``, and read from there on first use: ``import grading`` still loads no other module.
_WHOLE_PACKAGES = ("grading.report",)
_OWN_MODULE_OF = {name: module for module, names in _PUBLIC.items() for name in names}

if TYPE_CHECKING:
    from grading.admission.check import SUITE_KINDS as SUITE_KINDS
    from grading.admission.check import check_admission as check_admission
    from grading.admission.check import inject_reviewer_comment as inject_reviewer_comment
    from grading.admission.check import teach_scripted_judge as teach_scripted_judge
    from grading.admission.corpus import PAYLOAD_KINDS as PAYLOAD_KINDS
    from grading.admission.store import AdmissionReport as AdmissionReport
    from grading.admission.store import AdmissionRow as AdmissionRow
    from grading.atomic import write_atomic as write_atomic
    from grading.atomic import write_new as write_new
    from grading.basetree import BaseTree as BaseTree
    from grading.checks.outcome import RunDetails as RunDetails
    from grading.checks.outcome import RunMetrics as RunMetrics
    from grading.checks.outcome import grade as grade
    from grading.checks.outcome import grade_run as grade_run
    from grading.checks.run import LoadedTask as LoadedTask
    from grading.checks.run import Run as Run
    from grading.checks.run import make_run as make_run
    from grading.checks.run import make_task_files as make_task_files
    from grading.checks.run import read_run as read_run
    from grading.checks.run import read_task_files as read_task_files
    from grading.citations import Citation as Citation
    from grading.citations import parse_citations as parse_citations
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
    from grading.errors import printable as printable
    from grading.git import NO_COMMANDS_CONFIG as NO_COMMANDS_CONFIG
    from grading.git import Git as Git
    from grading.git import GitError as GitError
    from grading.git import GitResult as GitResult
    from grading.git import commit_on_new_branch as commit_on_new_branch
    from grading.git_push import Remote as Remote
    from grading.git_push import parse_remote as parse_remote
    from grading.git_push import push_branch as push_branch
    from grading.github_pulls import OpenedPullRequest as OpenedPullRequest
    from grading.github_pulls import open_pull_request as open_pull_request
    from grading.globs import glob_error as glob_error
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
    from grading.loaders import load_manifest as load_manifest
    from grading.loaders import parse_grade as parse_grade
    from grading.loaders import parse_rubric as parse_rubric
    from grading.loaders import parse_run_record as parse_run_record
    from grading.loaders import validation_messages as validation_messages
    from grading.mutants.judging import MutantReport as MutantReport
    from grading.mutants.judging import MutantRow as MutantRow
    from grading.mutants.judging import judge_mutants as judge_mutants
    from grading.path_lists import parse_ignored_created as parse_ignored_created
    from grading.path_lists import parse_path_list as parse_path_list
    from grading.path_lists import read_path_list as read_path_list
    from grading.report import DEFAULT_BOOTSTRAP as DEFAULT_BOOTSTRAP
    from grading.report import DEFAULT_SEED as DEFAULT_SEED
    from grading.report import INTERVALS_TEXT as INTERVALS_TEXT
    from grading.report import LABEL_FIELDS as LABEL_FIELDS
    from grading.report import MAX_LABEL_FILE_BYTES as MAX_LABEL_FILE_BYTES
    from grading.report import METRIC_NAMES as METRIC_NAMES
    from grading.report import REPEATED_WARNINGS as REPEATED_WARNINGS
    from grading.report import Cell as Cell
    from grading.report import Contrast as Contrast
    from grading.report import ContrastRow as ContrastRow
    from grading.report import Disagreement as Disagreement
    from grading.report import Estimate as Estimate
    from grading.report import GradedRun as GradedRun
    from grading.report import ItemRow as ItemRow
    from grading.report import JudgeCost as JudgeCost
    from grading.report import JudgeVerdicts as JudgeVerdicts
    from grading.report import LabelRow as LabelRow
    from grading.report import LabelRowsError as LabelRowsError
    from grading.report import LabelTarget as LabelTarget
    from grading.report import MetricsDetails as MetricsDetails
    from grading.report import MetricsFile as MetricsFile
    from grading.report import MetricsJudge as MetricsJudge
    from grading.report import Notes as Notes
    from grading.report import PartSums as PartSums
    from grading.report import Provenance as Provenance
    from grading.report import ProvenanceJudge as ProvenanceJudge
    from grading.report import Report as Report
    from grading.report import ReportSums as ReportSums
    from grading.report import ReviewerAgreement as ReviewerAgreement
    from grading.report import RunRow as RunRow
    from grading.report import StrictMetricsFile as StrictMetricsFile
    from grading.report import TaskRow as TaskRow
    from grading.report import TaskRubric as TaskRubric
    from grading.report import VerdictGroup as VerdictGroup
    from grading.report import blocker_histogram as blocker_histogram
    from grading.report import build_report as build_report
    from grading.report import cell_notes as cell_notes
    from grading.report import code_version as code_version
    from grading.report import contrast_cell as contrast_cell
    from grading.report import contrast_estimate as contrast_estimate
    from grading.report import contrast_label as contrast_label
    from grading.report import contrast_rows as contrast_rows
    from grading.report import contrast_table as contrast_table
    from grading.report import corrected_contrast_label as corrected_contrast_label
    from grading.report import corrected_contrast_text as corrected_contrast_text
    from grading.report import download_name as download_name
    from grading.report import estimate_note as estimate_note
    from grading.report import forest_plot as forest_plot
    from grading.report import grade_metrics as grade_metrics
    from grading.report import human_mergeable_from_items as human_mergeable_from_items
    from grading.report import item_rows as item_rows
    from grading.report import judge_agreement as judge_agreement
    from grading.report import label_format as label_format
    from grading.report import label_target_text as label_target_text
    from grading.report import left_out_text as left_out_text
    from grading.report import metric_lines as metric_lines
    from grading.report import no_interval_reason as no_interval_reason
    from grading.report import parse_date as parse_date
    from grading.report import precision_text as precision_text
    from grading.report import rates_chart as rates_chart
    from grading.report import read_git_commit as read_git_commit
    from grading.report import read_label_rows as read_label_rows
    from grading.report import read_metrics as read_metrics
    from grading.report import read_rows as read_rows
    from grading.report import render_report_html as render_report_html
    from grading.report import report_csv as report_csv
    from grading.report import report_from_sums as report_from_sums
    from grading.report import report_label_target as report_label_target
    from grading.report import report_provenance as report_provenance
    from grading.report import reviewer_agreement as reviewer_agreement
    from grading.report import rows_file as rows_file
    from grading.report import rows_text as rows_text
    from grading.report import run_disagreements as run_disagreements
    from grading.report import run_inclusion_probability as run_inclusion_probability
    from grading.report import run_row as run_row
    from grading.report import settled_verdict as settled_verdict
    from grading.report import standalone as standalone
    from grading.report import warning_kind as warning_kind
    from grading.report import write_label_rows as write_label_rows
    from grading.run_files import GIT_DIR_CHANGES_NAME as GIT_DIR_CHANGES_NAME
    from grading.run_files import TESTS_LIST_ERROR_NAME as TESTS_LIST_ERROR_NAME
    from grading.run_files import TESTS_LIST_NAME as TESTS_LIST_NAME
    from grading.run_files import listing_error_text as listing_error_text
    from grading.run_files import read_listing_error as read_listing_error
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


def _module_of() -> dict[str, str]:
    """Each public name -> where the root takes it from: its module, or a whole package's ``__init__``."""
    found = dict(_OWN_MODULE_OF)
    for package in _WHOLE_PACKAGES:
        found.update(dict.fromkeys(importlib.import_module(package).__all__, package))
    return found


# Set by __getattr__ on first use (annotated here for the type checker; no value, so the lookup still runs).
__all__: list[str]
_MODULE_OF: dict[str, str]


# The root's own copy of grading.lazy.lazy_interface: importing that module too would add to the start-up
# of every `rubric` command and of the app, which import grading first. ``__all__`` and ``_MODULE_OF``
# load on first use as well, as they name the packages' names.
def __getattr__(name: str) -> object:
    if name in ("__all__", "_MODULE_OF"):
        module_of = _module_of()
        globals().update(__all__=sorted(module_of), _MODULE_OF=module_of)
        return globals()[name]
    module = _OWN_MODULE_OF.get(name) or _module_of().get(name)
    if module is None:
        raise AttributeError(f"module 'grading' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain module attribute
    return value


def __dir__() -> list[str]:
    if "__all__" not in globals():
        __getattr__("__all__")  # puts it in globals
    return sorted([*globals(), *globals()["__all__"]])

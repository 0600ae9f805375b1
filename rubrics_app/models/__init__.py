"""The app's models, one module per concern, each building only on the ones before it:

    repositories   repositories, members, judge and drafting settings
    rubrics        tasks, rubric revisions, items, calibration diffs (the freeze: rubrics_app/freeze.py)
    audit          the audit trail
    jobs           Job rows and the typed result of each kind of job
    drafts         drafting a rubric from a merged PR
    calibration    calibration runs, rows, verdicts and the verdict cache
    runs           agent runs, grades, verdicts, the review queue, disputes, sweeps
    mutants        the oracle's mutants judged with a calibration
    reports        the report kept ready for the page
    tokens         personal access tokens of the HTTP API

Everything is re-exported here: import models from ``rubrics_app.models``, as Django does.
"""

from __future__ import annotations

from rubrics_app.models.audit import AuditEvent, AuditVerb
from rubrics_app.models.calibration import (
    CalibrationRow,
    CalibrationRun,
    CalibrationStatus,
    CalibrationVerdict,
    JudgeCacheEntry,
    JudgeRole,
)
from rubrics_app.models.drafts import DraftStep, RubricDraft
from rubrics_app.models.jobs import (
    RESULT_MODELS,
    CalibrationResult,
    DraftResult,
    EvidenceChangeLine,
    EvidenceCheckResult,
    ExportResult,
    FieldProblem,
    Job,
    JobFile,
    JobKind,
    JobResult,
    JobStatus,
    SweepResult,
    ValidationResult,
    result_json,
)
from rubrics_app.models.mutants import CalibrationMutant, HarmlessMutant
from rubrics_app.models.reports import ReportSnapshot
from rubrics_app.models.repositories import (
    ITEM_ID_RE,
    DraftSetting,
    JudgeSetting,
    Membership,
    RemoteSetting,
    Repository,
    Role,
    name_validator,
)
from rubrics_app.models.rubrics import (
    FROZEN_STATUSES,
    ITEM_OPTIONAL_KEYS,
    REVISION_OPTIONAL_KEYS,
    TASK_FILES,
    CalibrationDiff,
    DiffKind,
    FieldError,
    ItemComment,
    ItemKind,
    Origin,
    PromptStyle,
    ReviewState,
    RevisionFrozen,
    RevisionStatus,
    RubricInvalid,
    RubricItem,
    RubricRevision,
    Task,
    TransitionError,
)
from rubrics_app.models.runs import (
    MAX_RUN_SOURCE,
    AgentRun,
    AgentRunDiff,
    AuditDraw,
    Dispute,
    DisputeSource,
    EvidenceChange,
    GradeSource,
    HumanLabel,
    HumanVerdict,
    ItemFlag,
    ItemVerdict,
    JudgeGrade,
    QueueKind,
    QueuePair,
    ReportRow,
    ReportVerdicts,
    RunGrade,
    Sweep,
    criterion_sha256,
    deciding_current_grades,
    lock_current_grades,
    refresh_current_grades,
)
from rubrics_app.models.tokens import ApiToken

__all__ = [
    "MAX_RUN_SOURCE",
    "AgentRun",
    "AgentRunDiff",
    "ApiToken",
    "AuditDraw",
    "AuditEvent",
    "AuditVerb",
    "CalibrationDiff",
    "CalibrationMutant",
    "CalibrationResult",
    "CalibrationRow",
    "CalibrationRun",
    "CalibrationStatus",
    "CalibrationVerdict",
    "DiffKind",
    "Dispute",
    "DisputeSource",
    "DraftResult",
    "DraftSetting",
    "DraftStep",
    "EvidenceChange",
    "EvidenceChangeLine",
    "EvidenceCheckResult",
    "ExportResult",
    "FROZEN_STATUSES",
    "FieldError",
    "FieldProblem",
    "GradeSource",
    "HarmlessMutant",
    "HumanLabel",
    "HumanVerdict",
    "ItemFlag",
    "ITEM_ID_RE",
    "ITEM_OPTIONAL_KEYS",
    "ItemComment",
    "ItemKind",
    "ItemVerdict",
    "Job",
    "JobFile",
    "JobKind",
    "JobResult",
    "JobStatus",
    "JudgeCacheEntry",
    "JudgeGrade",
    "JudgeRole",
    "JudgeSetting",
    "Membership",
    "Origin",
    "PromptStyle",
    "QueueKind",
    "RESULT_MODELS",
    "REVISION_OPTIONAL_KEYS",
    "QueuePair",
    "ReportRow",
    "ReportSnapshot",
    "ReportVerdicts",
    "RemoteSetting",
    "Repository",
    "ReviewState",
    "RevisionFrozen",
    "RevisionStatus",
    "Role",
    "RubricDraft",
    "RubricInvalid",
    "RubricItem",
    "RubricRevision",
    "RunGrade",
    "Sweep",
    "SweepResult",
    "TASK_FILES",
    "Task",
    "TransitionError",
    "ValidationResult",
    "name_validator",
    "result_json",
    "criterion_sha256",
    "deciding_current_grades",
    "lock_current_grades",
    "refresh_current_grades",
]

# Field defaults that migrations name as rubrics_app.models._<name>: a migration is history, so the names it
# was written with stay importable here, bound to the functions the models use.
from rubrics_app.models import repositories, rubrics

_default_guidance_globs = repositories.default_guidance_globs
_all_item_optional_keys = rubrics.all_item_optional_keys
_all_revision_optional_keys = rubrics.all_revision_optional_keys
_no_keys = rubrics.no_keys

"""The API's request and response models (pydantic, as grading's are): what the OpenAPI schema says."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field

from grading import ItemRow, LabelRow, Provenance, RunRow

# A row's id as the body names it: the databases' 64-bit range (SQLite refuses a larger number outright
# and a foreign-key lookup does not guard against it), so a larger one is a 422 naming the field.
RowId = Annotated[int, Field(ge=1, le=2**63 - 1)]


class RepositoryOut(BaseModel):
    name: str
    role: str  # what this token may do there: the lower of its role and its owner's


class TaskOut(BaseModel):
    task_id: str
    base_commit: str
    base_date: str
    admitted_revision: int | None  # its number; None: no admitted revision


class RevisionOut(BaseModel):
    number: int
    status: str
    origin: str
    created_at: datetime


class FileOut(BaseModel):
    path: str  # relative to tasks/<task_id>/
    base64: str


class AdmittedOut(BaseModel):
    task_id: str
    revision: int
    sha256: str  # of rubric.json as exported
    files: list[FileOut]  # rubric.json and its calib diffs, as the export writes them


class RunIn(BaseModel):
    name: str = Field(min_length=1, max_length=500)  # the run directory as the client names it
    # File name -> content: run.json, grade.json, workspace.diff, ignored_created.txt and the optional ones.
    files: dict[str, str]
    encoding: Literal["utf-8", "base64"] = "utf-8"


class RunPushIn(BaseModel):
    runs: list[RunIn] = Field(min_length=1)


class RunPushOut(BaseModel):
    created: list[int]
    unchanged: list[int]
    grades_created: int
    grades_unchanged: int


class GradeSummary(BaseModel):
    id: int
    status: str
    mergeable: bool | None
    merge_score: float | None
    provisional: bool


class RunOut(BaseModel):
    id: int
    task: str
    arm: str
    model: str
    repetition: int
    prompt_style: str
    passed: bool | None
    diff_sha256: str
    source: str
    imported_at: datetime
    current_grade: GradeSummary | None


class RunPage(BaseModel):
    items: list[RunOut]
    next_cursor: str | None  # pass as ?cursor= for the next page; None: this was the last


class VerdictOut(BaseModel):
    item_id: str
    kind: str
    verdict: str
    reason: str
    locations: list[Any]


class JudgeOut(BaseModel):
    role: str
    judge: str
    model_id: str
    scripted: bool
    failure: str
    verdicts: list[VerdictOut]


class GradeOut(BaseModel):
    id: int
    rubric_sha256: str
    revision: int | None
    primary_judge: str
    source: str
    status: str
    mergeable: bool | None
    merge_score: float | None
    provisional: bool
    is_current: bool
    created_at: datetime
    judges: list[JudgeOut]


class RunDetail(RunOut):
    grades: list[GradeOut]  # newest first


class SweepIn(BaseModel):
    """The options of ``manage.py sweep``."""

    task: str | None = None
    arm: str = ""
    model: str = ""
    revision: int | None = (
        None  # a revision id (as --revision PK): grade against it, every result provisional
    )
    second_sample: float | None = Field(default=None, ge=0.0, le=1.0)
    regrade_sample: float | None = Field(default=None, ge=0.0, le=1.0)
    batch: bool | None = None  # None: the repository's choice
    export: bool = False  # when the job is done, its runs as a zip: GET .../sweeps/{id}/export


class JobOut(BaseModel):
    id: int
    kind: str
    status: str
    progress: int
    error: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    result: dict[str, Any] | None


class SweepOut(BaseModel):
    id: int
    scope: str
    judge: str
    scripted: bool
    batch: bool
    provisional: bool
    total_runs: int
    done_runs: int
    graded_runs: int
    judge_failures: int
    calls: int
    cost_usd: float
    export: bool  # asked for an export
    export_ready: bool  # the export is written (the job is done)
    job: JobOut


class LabelsQuery(BaseModel):
    """The labels list's filters (each an exact match; ``reviewer`` a username) and its page."""

    task: str = ""
    arm: str = ""
    model: str = ""
    item: str = ""
    reviewer: str = ""
    queue: str = ""
    verdict: str = ""
    cursor: str | None = None  # the next_cursor of the page before
    limit: int = 100  # 1 to API_PAGE_MAX


class LabelPage(BaseModel):
    items: list[LabelRow]  # the labels file's rows (grading.LabelRow), oldest label first
    next_cursor: str | None  # pass as ?cursor= for the next page; None: this was the last


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("holds a NUL character")
    return value


class LabelIn(BaseModel):
    """A reviewer's label on one (run, item) pair, as the queue page records it."""

    run_id: RowId
    item_id: Annotated[str, Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_.-]+$")]
    verdict: Literal["pass", "fail", "unsure"]
    note: Annotated[str, Field(max_length=5000), AfterValidator(_no_nul)] = ""
    queue: Literal["judges", "regrade", "agreed", "audit"] = "judges"  # the queue it was labelled in
    adjudicate: bool = False  # a maintainer's ruling on a pair whose reviewers disagree
    grade_id: RowId | None = None  # the grade whose pair is labelled; None: the run's current grade


class ReportRowsQuery(BaseModel):
    """The report page's filters, and the answer's format: JSON, or the page's JSONL or CSV file."""

    task: str = ""
    arm: str = ""
    model: str = ""
    prompt_style: str = ""
    format: Literal["json", "jsonl", "csv"] = "json"


class ReportRunsOut(BaseModel):
    provenance: Provenance
    rows: list[RunRow]


class ReportItemsOut(BaseModel):
    provenance: Provenance
    rows: list[ItemRow]

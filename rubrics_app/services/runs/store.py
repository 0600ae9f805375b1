"""Store agent runs, their grades and judge verdicts: the run imports' entry points and the one grade writer.

A run arrives as files (a folder on disk or an uploaded zip: :mod:`rubrics_app.services.runs.files`; runs
built in memory: :mod:`rubrics_app.services.runs.swe_bench`) and is checked into a prepared run
(:mod:`rubrics_app.services.runs.checks`) before anything is written.

All or nothing, as rubric import: every run is read and checked first; only when none has a problem are
rows written, in one transaction. A run is keyed by (task, arm, model, repetition): importing the same
files again changes nothing, while different files under a key already imported are a problem (a run is a
record of what happened; it is never silently replaced).

The one grade writer: every write of a grade (the run import, a sweep) goes through
:func:`writing_grades`, which locks the runs' tasks first and, before its transaction commits, refreshes
what derives from the grades written or deleted: the report rows and review queue pairs
(``services.report_rows``) and which grade of each run is current (``models.refresh_current_grades``).
What decides the current grade without writing one (a revision admitted, the primary judge set) changes
inside ``models.deciding_current_grades``, beside the rule, with the same lock and refresh. No other module
writes grade rows or calls the refreshes (tests/app/test_grade_writer.py reads the source to keep it so).
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max, QuerySet
from django.template.defaultfilters import pluralize

from grading import JudgeResult, StrictMetricsFile, harness_infra_failure
from rubrics_app.access import Actor
from rubrics_app.models import (
    AgentRun,
    AgentRunDiff,
    GradeSource,
    ItemVerdict,
    JudgeGrade,
    JudgeRole,
    Repository,
    Role,
    RubricRevision,
    RunGrade,
    Task,
    lock_current_grades,
    refresh_current_grades,
)
from rubrics_app.services.report_rows import refresh_report_rows
from rubrics_app.services.reports.report import report_changed
from rubrics_app.services.rubrics.exports import rubric_json_bytes
from rubrics_app.services.rubrics.files import ImportFailed, ImportProblem, checked_zip_members, open_zip
from rubrics_app.services.runs.checks import PreparedRun, prepare_runs
from rubrics_app.services.runs.files import (
    DIFF_FILE,
    RUN_FILES,
    RunFiles,
    member_label,
    read_run_dirs,
    read_zip_runs,
)


def revision_sha256(revision: RubricRevision) -> str:
    """sha256 of the revision's rubric.json as exported: the content a run is graded against.

    ``rubric grade`` run on an exported task directory reads exactly these bytes.
    """
    return hashlib.sha256(rubric_json_bytes(revision)).hexdigest()


def sample_key(*parts: str) -> float:
    """A number in [0, 1) fixed by the pair's identity (not by row ids, which differ between databases)."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return int(digest[:8], 16) / 2**32


@dataclass
class RunImport:
    """What an import did: runs and grades created, and those already there unchanged."""

    created: list[AgentRun] = field(default_factory=list)
    unchanged: list[AgentRun] = field(default_factory=list)
    grades_created: int = 0
    grades_unchanged: int = 0

    def summary(self) -> str:
        return (
            f"{len(self.created)} run{pluralize(len(self.created))} imported, "
            f"{len(self.unchanged)} already there; "
            f"{self.grades_created} grade{pluralize(self.grades_created)} imported, "
            f"{self.grades_unchanged} already there"
        )


def _grade_key(run: PreparedRun) -> tuple[str, str]:
    assert run.metrics is not None
    judge = run.metrics.metrics.details.judge
    return (run.metrics.metrics.rubric_sha256 or "", judge.judge if judge is not None else "")


def _check_against_stored(runs: list[PreparedRun], problems: list[ImportProblem]) -> dict[int, AgentRun]:
    """Runs already stored under the same key must be the same files. Returns them by prepared index."""
    stored: dict[int, AgentRun] = {}
    for index, run in enumerate(runs):
        existing = AgentRun.objects.filter(
            task=run.task, arm=run.record.arm, model=run.record.model, repetition=run.record.repetition
        ).first()
        if existing is None:
            continue
        changed = [f for f in RUN_FILES if existing.files_sha256.get(f) != run.files_sha256.get(f)]
        if changed:
            problems.append(
                ImportProblem(
                    posixpath.join(run.label, "run.json") if run.label else "run.json",
                    "a run with this task, arm, model and repetition is already imported with a "
                    f"different {', '.join(changed)}",
                )
            )
            continue
        stored[index] = existing
        if run.metrics is not None:
            rubric_sha, judge = _grade_key(run)
            grade = existing.grades.filter(rubric_sha256=rubric_sha, primary_judge=judge).first()
            if grade is not None and grade.metrics_sha256 != run.metrics.sha256:
                problems.append(
                    ImportProblem(
                        run.metrics.label,
                        "this run already has a different metrics.json for the same rubric and primary judge",
                    )
                )
    return stored


# --- writing ------------------------------------------------------------------------------------------


def _revision_for(task: Task, rubric_sha: str) -> RubricRevision | None:
    if not rubric_sha:
        return None
    for revision in RubricRevision.objects.filter(task=task).order_by("-number"):
        if revision_sha256(revision) == rubric_sha:
            return revision
    return None


def _store_judge(grade: RunGrade, role: str, result: JudgeResult, identity: tuple[str, ...]) -> None:
    judge = JudgeGrade.objects.create(
        grade=grade,
        role=role,
        judge=result.judge,
        scripted=result.scripted,
        model_id=result.model_id or "",
        failure=result.failure or "",
        cost_usd=result.usage.cost_usd,
        cost_known=result.usage.cost_known,
        calls=result.calls,
        cache_hit=result.cache_hit,
        cache_bypass=result.cache_bypass or "",
    )
    previous = result.previous_verdicts or {}
    ItemVerdict.objects.bulk_create(
        ItemVerdict(
            judge=judge,
            item_id=v.item_id,
            kind=v.kind,
            verdict=v.verdict,
            reason=v.reason,
            locations=[loc.model_dump(mode="json") for loc in v.locations],
            model_id=v.model_id or result.model_id or "",
            flagged_inconsistent=v.flagged_inconsistent,
            previous_verdict=previous.get(v.item_id, "") if result.cache_bypass else "",
            sample_key=sample_key(*identity, v.item_id),
        )
        for v in result.verdicts
    )


# --- the one grade writer -----------------------------------------------------------------------------------


@dataclass
class GradeWrites:
    """The grades one :func:`writing_grades` transaction stores or deletes, through these methods only."""

    stored: list[int] = field(default_factory=list)  # grades created
    changed_runs: set[int] = field(default_factory=set)  # runs with a grade created or deleted
    deleted_from: set[int] = field(default_factory=set)  # runs with a grade deleted

    def store(
        self,
        run: AgentRun,
        metrics: StrictMetricsFile,
        raw: dict[str, Any],
        sha256: str,
        source: str,
        *,
        revision: RubricRevision | None = None,
        provisional: bool | None = None,
    ) -> tuple[RunGrade, bool]:
        """The grade and its verdict rows, or the one already stored under the same key (created: False).

        ``revision`` is the revision graded against when the caller knows it (a sweep), else looked up by
        the rubric content; ``provisional`` the caller's decision, else taken from metrics.json and the
        revision."""
        details = metrics.details
        rubric_sha = metrics.rubric_sha256 or ""
        primary = details.judge.judge if details.judge is not None else ""
        existing = RunGrade.objects.filter(run=run, rubric_sha256=rubric_sha, primary_judge=primary).first()
        if existing is not None:
            return existing, False
        if revision is None:
            revision = _revision_for(run.task, rubric_sha)
        if provisional is None:
            # metrics.json says provisional: false when the grader's admission store held a passing check
            # of this content with this judge; true only means that store held none. A revision of the same
            # content that this app approved or admitted counts as well, so only then does the revision
            # decide.
            provisional = metrics.provisional is not False and (revision is None or revision.is_provisional)
        grade = RunGrade.objects.create(
            run=run,
            rubric_sha256=rubric_sha,
            revision=revision,
            primary_judge=primary,
            source=source,
            status=details.status,
            mergeable=metrics.mergeable,
            merge_score=metrics.merge_score,
            grader_failure=metrics.grader_failure,
            judge_failure=metrics.judge_failure,
            provisional=provisional,
            reasons=list(details.reasons),
            metrics=raw,
            metrics_sha256=sha256,
        )
        identity = (run.task.task_id, run.arm, run.model, str(run.repetition), rubric_sha, primary)
        for role, result in ((JudgeRole.PRIMARY, details.judge), (JudgeRole.SECOND, details.second_judge)):
            if result is not None:
                _store_judge(grade, role, result, identity)
        self.stored.append(grade.pk)
        self.changed_runs.add(run.pk)
        return grade, True

    def delete(self, grades: QuerySet[RunGrade]) -> None:
        """Delete these grades (their verdicts, report rows and queue pairs go with them)."""
        runs = set(grades.values_list("run_id", flat=True))
        grades.delete()
        self.changed_runs |= runs
        self.deleted_from |= runs

    def refresh(self) -> None:
        # The report rows and queue pairs of the new grades, and of the newest grade left of a run that lost
        # one (it may be the run's newest now: its ``latest`` flag); then each changed run's current grade.
        newest: list[int] = []
        if self.deleted_from:
            newest = list(
                RunGrade.objects.filter(run_id__in=self.deleted_from)
                .values("run_id")
                .annotate(newest=Max("pk"))
                .values_list("newest", flat=True)
            )
        refresh_report_rows([*self.stored, *newest])
        if self.changed_runs:
            refresh_current_grades(runs=sorted(self.changed_runs))


@contextmanager
def writing_grades(
    *, runs: Iterable[int] | None = None, repository: Repository | None = None
) -> Iterator[GradeWrites]:
    """The one way grades are written: one transaction that locks the tasks of ``runs`` (or of
    ``repository``) before any grade row (models.lock_current_grades), in which the caller stores and
    deletes grades through the yielded :class:`GradeWrites`, and which refreshes the derived rows (report
    rows, queue pairs, current grades) of what it wrote before it commits. Nothing is kept when the body
    raises."""
    with transaction.atomic():
        lock_current_grades(runs=runs, repository=repository)
        writes = GradeWrites()
        yield writes
        writes.refresh()


def import_run_dirs(repository: Repository, root: Path, label_root: str, user: Actor) -> RunImport:
    """Every run directory under ``root`` (or ``root`` itself), all or nothing."""
    return import_runs(
        repository, lambda problems: read_run_dirs(root, label_root, problems), label_root, user
    )


def import_runs(
    repository: Repository,
    read: Callable[[list[ImportProblem]], Iterable[RunFiles]],
    label_root: str,
    user: Actor,
) -> RunImport:
    """The runs ``read`` gives, one at a time (it adds what it could not read to the problems it is handed),
    all or nothing: a folder (:func:`read_run_dirs`), a zip's members (:func:`read_zip_runs`) or runs built
    in memory (SWE-bench predictions). Nothing is written to disk on the way."""
    user.require(Role.MAINTAINER, repository)
    try:
        return _import_runs_atomic(repository, read, user)
    except IntegrityError:
        # Another import stored one of these runs between our check and our insert: nothing of this one
        # was kept (one transaction), and trying again finds those runs stored.
        message = "another import stored some of these runs at the same time; nothing imported, try again"
        raise ImportFailed([ImportProblem(label_root or "upload", message)]) from None


def _import_runs_atomic(
    repository: Repository, read: Callable[[list[ImportProblem]], Iterable[RunFiles]], user: Actor
) -> RunImport:
    with writing_grades(repository=repository) as grades:
        problems: list[ImportProblem] = []
        prepared = prepare_runs(repository, read(problems), problems)
        stored = _check_against_stored(prepared, problems)
        if problems:
            raise ImportFailed(problems)
        outcome = RunImport()
        for index, run in enumerate(prepared):
            agent_run = stored.get(index)
            if agent_run is None:
                agent_run = AgentRun.objects.create(
                    task=run.task,
                    arm=run.record.arm,
                    model=run.record.model,
                    repetition=run.record.repetition,
                    prompt_style=run.record.prompt_style or "",
                    run_json=run.record.model_dump(mode="json", exclude_unset=True),
                    grade_json=run.grade.metrics(),
                    passed=None if harness_infra_failure(run.record, run.grade) else run.grade.passed,
                    ignored_created=run.ignored_created,
                    tests_list=run.tests_list,
                    tests_list_error=run.tests_list_error,
                    git_dir_changes=run.git_dir_changes,
                    diff_sha256=run.files_sha256["workspace.diff"],
                    diff_bytes=run.diff_size,
                    files_sha256=run.files_sha256,
                    source=run.label,
                    imported_by=user.user if getattr(user.user, "is_authenticated", False) else None,
                )
                content = run.read_diff()
                if hashlib.sha256(content).hexdigest() != run.files_sha256[DIFF_FILE]:
                    label = member_label(run.label, DIFF_FILE)
                    raise ImportFailed([ImportProblem(label, "changed while it was being imported")])
                AgentRunDiff.objects.create(run=agent_run, content=content)
                outcome.created.append(agent_run)
            else:
                outcome.unchanged.append(agent_run)
            if run.metrics is not None:
                _, created = grades.store(
                    agent_run, run.metrics.metrics, run.metrics.raw, run.metrics.sha256, GradeSource.IMPORTED
                )
                if created:
                    outcome.grades_created += 1
                else:
                    outcome.grades_unchanged += 1
        if outcome.created or outcome.grades_created:
            report_changed(repository.pk)  # a worker computes the new report once this commits
    return outcome


def import_runs_zip(repository: Repository, uploaded: IO[bytes] | Any, user: Actor) -> RunImport:
    """A zip of run directories (any layout: every directory holding a run.json is a run), read from the
    archive as it is: nothing is unpacked to disk."""
    user.require(Role.MAINTAINER, repository)
    label = Path(str(getattr(uploaded, "name", "") or "upload.zip")).name
    limit = settings.RUNS_UPLOAD_MAX_BYTES
    size = getattr(uploaded, "size", None)
    if isinstance(size, int) and size > limit:
        raise ImportFailed([ImportProblem(label, f"upload is {size} bytes; the limit is {limit}")])
    if hasattr(uploaded, "seek"):
        uploaded.seek(0)
    with open_zip(uploaded, label) as archive:
        members = checked_zip_members(
            archive,
            label,
            max_members=settings.RUNS_ZIP_MAX_MEMBERS,
            max_total=settings.RUNS_ZIP_MAX_UNCOMPRESSED_BYTES,
        )
        return import_runs(
            repository, lambda problems: read_zip_runs(archive, members, label, problems), "", user
        )

"""Agent runs, their grades and judge verdicts, human verdicts from the review queue, and re-review flags.

The run side of the app, read as one unit. The tables are keyed so that filling them twice from the same
input changes nothing:

    AgentRun       (task, arm, model, repetition)          run.json, grade.json, the small files
    AgentRunDiff   one row per run                          workspace.diff: its own table, never in lists
    RunGrade       (run, rubric_sha256, primary_judge)      one grading: outcome, metrics.json as read
    JudgeGrade     (grade, role)                            primary or second judge: spec, model id, cost
    ItemVerdict    (judge, item_id)                         verdict, reason, cited lines, model id
    HumanVerdict   (run, item_id, criterion hash, reviewer) a reviewer's label; never changes a score (§4)
    ReportRow      one row per grade                        what the report reads of it, precomputed
    QueuePair      (grade, item_id, kind)                   the review queue's pairs, precomputed

Today grades come from imported metrics.json files; a sweep job fills the same rows (``source = sweep``),
keyed by the revision content it graded against (``rubric_sha256``) and its primary judge.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.db.models import Case, F, OuterRef, Q, Subquery, When
from django.db.models.functions import Length
from django.db.models.lookups import LessThanOrEqual
from django.utils import timezone

from grading import MAX_RUN_INT
from rubrics_app.models.calibration import JudgeRole
from rubrics_app.models.jobs import Job
from rubrics_app.models.repositories import Repository
from rubrics_app.models.rubrics import RevisionStatus, RubricItem, RubricRevision, Task

# The run's source, its folder or zip member as the user named it: the run import refuses a longer one
# before anything is written, and the schema holds the same bound on SQLite as PostgreSQL's varchar does.
MAX_RUN_SOURCE = 500


class AgentRun(models.Model):
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="agent_runs")
    arm = models.CharField(max_length=200, blank=True)
    model = models.CharField(max_length=200, blank=True)
    repetition = models.IntegerField()
    prompt_style = models.CharField(max_length=10, blank=True)
    run_json = models.JSONField(default=dict)
    grade_json = models.JSONField(default=dict)
    # grade.json's "pass"; None when it measured nothing of the patch: the SWE-bench harness's own
    # infrastructure failed on it (grading.harness_infra_failure)
    passed = models.BooleanField(null=True)
    ignored_created = models.TextField(blank=True)
    tests_list = models.TextField(null=True, blank=True)  # None: the run had no tests_list.txt
    # tests_list.error: why tests.list failed in the workspace (capture writes it instead of tests_list.txt)
    tests_list_error = models.TextField(null=True, blank=True)
    # git_dir_changes.txt: the paths under .git the run changed, as capture wrote them (a path list). None:
    # captured without the snapshot's private record, so the git_dir integrity part is not measured; "":
    # captured, nothing under .git changed.
    git_dir_changes = models.TextField(null=True, blank=True)
    diff_sha256 = models.CharField(max_length=64)
    diff_bytes = models.PositiveBigIntegerField()
    # sha256 of each file as imported, so a repeated import can tell "the same run" from "a different run
    # under the same key" without reading the stored diff back.
    files_sha256 = models.JSONField(default=dict)
    source = models.CharField(max_length=MAX_RUN_SOURCE, blank=True)  # the folder or zip member it came from
    imported_at = models.DateTimeField(default=timezone.now)
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["task_id", "arm", "model", "repetition"]
        constraints = [
            # run.json's identity (§7 statistics are per task, arm and model over repetitions).
            models.UniqueConstraint(
                fields=["task", "arm", "model", "repetition"], name="one_agent_run_per_key"
            ),
            # The bound run.json, the SWE-bench form and --repetition are checked against (grading's
            # MAX_RUN_INT), in the schema too: PostgreSQL's integer stops there, SQLite's does not, so a
            # writer that skipped the checks would get a run on one database and an overflow on the other.
            models.CheckConstraint(
                condition=Q(repetition__gte=0) & Q(repetition__lte=MAX_RUN_INT),
                name="agent_run_repetition_in_range",
            ),
            # SQLite stores any length in a varchar; PostgreSQL refuses past it (MAX_RUN_SOURCE).
            models.CheckConstraint(
                condition=LessThanOrEqual(Length("source"), MAX_RUN_SOURCE), name="agent_run_source_length"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.task} {self.arm or '-'}/{self.model or '-'}#{self.repetition}"


class AgentRunDiff(models.Model):
    """workspace.diff of a run. Tens of MB at times: lists of runs never join or load this table."""

    run = models.OneToOneField(AgentRun, on_delete=models.CASCADE, primary_key=True, related_name="diff")
    content = models.BinaryField()  # the bytes as captured: a diff may be non-UTF-8


class GradeSource(models.TextChoices):
    IMPORTED = "imported", "Imported metrics.json"
    SWEEP = "sweep", "Sweep"


def current_grade_key() -> Q:
    """A grade that is current by its key: against its task's admitted revision, with the repository's
    primary judge as it is now (or with no judge at all: the test gate failed, no judge could change it)."""
    return Q(revision__status=RevisionStatus.ADMITTED, revision__task_id=F("run__task_id")) & (
        Q(primary_judge="") | Q(primary_judge=F("run__task__repository__judges__judge"))
    )


def _ranked_current(grades: type[models.Model]) -> Subquery:
    """The pk of the current grade of the outer query's run, by the rule: a grade current by its key
    (:func:`current_grade_key`), else the newest. One correlated subquery on the run's own grades."""
    return Subquery(
        grades._default_manager.filter(run_id=OuterRef("run_id"))
        .annotate(keyed=Case(When(current_grade_key(), then=1), default=0))
        .order_by("-keyed", "-pk")
        .values("pk")[:1]
    )


def _task_ids(
    runs: Iterable[int] | models.QuerySet[Any] | None,
    tasks: Iterable[int] | models.QuerySet[Any] | None,
    repository: Repository | int | None,
) -> models.QuerySet[Any]:
    chosen = Task.objects.all()
    if runs is not None:
        chosen = chosen.filter(pk__in=AgentRun.objects.filter(pk__in=runs).values("task_id"))
    if tasks is not None:
        chosen = chosen.filter(pk__in=tasks)
    if repository is not None:
        chosen = chosen.filter(repository_id=getattr(repository, "pk", repository))
    return chosen


def lock_current_grades(
    *,
    runs: Iterable[int] | models.QuerySet[Any] | None = None,
    tasks: Iterable[int] | models.QuerySet[Any] | None = None,
    repository: Repository | int | None = None,
) -> None:
    """Lock the task rows of these runs (or tasks, or the repository's), in pk order, until the transaction
    ends. Every transaction that changes what decides a current grade (a grade written or deleted, an
    admission, a change of primary judge) takes this lock first, before any grade row it writes, and
    refreshes the marker before it commits: two such transactions then run their refreshes one after the
    other, and the later one sees what the earlier one committed, so the stored marker is never left by a
    race. (Taken first, it cannot deadlock against a refresh that waits on a grade row. A no-op on SQLite,
    which lets one writer at a time anyway.)"""
    list(_task_ids(runs, tasks, repository).select_for_update(of=("self",)).order_by("pk").values_list("pk"))


def refresh_current_grades(
    *,
    runs: Iterable[int] | models.QuerySet[Any] | None = None,
    tasks: Iterable[int] | models.QuerySet[Any] | None = None,
    repository: Repository | int | None = None,
) -> None:
    """Store which grade of each run is current (``RunGrade.is_current``) for the runs given (their pks or
    a query of them), the runs of ``tasks``, or the runs of ``repository``: the rule
    (:func:`current_grade_key`, else the newest) derived in the database, two UPDATE statements, whatever
    the number of runs. Call it wherever the answer can change: a grade written or deleted, a revision
    admitted (which retires the task's previous one), the repository's primary judge set; in the same
    transaction, after :func:`lock_current_grades` (which it takes again here, for a caller that did not)."""
    grades = RunGrade.objects.all()
    if runs is not None:
        grades = grades.filter(run_id__in=runs)
    if tasks is not None:
        grades = grades.filter(run__task_id__in=tasks)
    if repository is not None:
        grades = grades.filter(run__task__repository_id=getattr(repository, "pk", repository))
    with transaction.atomic():
        lock_current_grades(runs=runs, tasks=tasks, repository=repository)
        write_current_marker(RunGrade, grades.values("pk"))
        # The queue's pairs and the report rows carry the marker too (``current``), so a queue's page is
        # one index range and the label target's sums one index scan.
        for summary in (QueuePair, ReportRow):
            rows = summary.objects.filter(grade__in=grades.values("pk"))
            rows.filter(current=True, grade__is_current=False).update(current=False)
            rows.filter(current=False, grade__is_current=True).update(current=True)


@contextmanager
def deciding_current_grades(
    *, tasks: Iterable[int] | None = None, repository: Repository | int | None = None
) -> Iterator[None]:
    """A change of what decides which grade of a run is current, with no grade written (a revision of
    ``tasks`` admitted, which retires the one before; the ``repository``'s primary judge set): one
    transaction that locks those tasks first (:func:`lock_current_grades`) and stores the current grades
    anew (and their copies on the queue pairs and report rows) before it commits. Grades themselves are
    written through ``services.runs.store.writing_grades``, which refreshes the same way."""
    with transaction.atomic():
        lock_current_grades(tasks=tasks, repository=repository)
        yield
        refresh_current_grades(tasks=tasks, repository=repository)


def write_current_marker(grades: type[models.Model], pks: models.QuerySet[Any]) -> None:
    """Set ``is_current`` on the grades ``pks`` selects (whole runs) by the rule; ``grades`` is the model
    (the migration that added the marker passes its historical one). Unmark first: the database holds one
    current grade per run at every statement."""
    manager = grades._default_manager
    ranked = _ranked_current(grades)
    manager.filter(pk__in=pks, is_current=True).exclude(pk=ranked).update(is_current=False)
    manager.filter(pk__in=pks, is_current=False, pk=ranked).update(is_current=True)


class RunGradeQuerySet(models.QuerySet["RunGrade"]):
    def current(self) -> RunGradeQuerySet:
        """The run's current grade, one per run: the one against its task's admitted revision with the
        repository's current primary judge (:func:`current_grade_key`), else the newest. A run graded again
        after a new admission or a change of judge has older grades: history, never counted, listed or
        labelled (the run page shows them). This is the one definition; the queue, the report and every
        count read it.

        Stored, not derived here: ``RunGrade.is_current``, which :func:`refresh_current_grades` writes by
        that rule wherever the answer can change."""
        return self.filter(is_current=True)

    def history(self) -> RunGradeQuerySet:
        """Every grade that is not its run's current one."""
        return self.filter(is_current=False)

    def derived_current(self) -> RunGradeQuerySet:
        """The current grades derived by the rule on every read, as ``current()`` did before the marker was
        stored: what the tests compare the stored marker with."""
        return self.filter(pk=_ranked_current(RunGrade))


class RunGrade(models.Model):
    """One grading of a run: against one rubric content, with one primary judge. Which of a run's grades
    counts is ``RunGrade.objects.current()``."""

    objects = RunGradeQuerySet.as_manager()

    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="grades")
    # sha256 of the rubric.json bytes graded against; "" when the metrics.json did not record it.
    rubric_sha256 = models.CharField(max_length=64, blank=True)
    # The revision with that content, when the app holds one.
    revision = models.ForeignKey(
        RubricRevision, on_delete=models.SET_NULL, null=True, blank=True, related_name="run_grades"
    )
    primary_judge = models.CharField(max_length=500, blank=True)  # "" when no judge was called
    source = models.CharField(max_length=20, choices=GradeSource.choices, default=GradeSource.IMPORTED)
    status = models.CharField(max_length=30)  # grading.checks.outcome's OutcomeStatus
    mergeable = models.BooleanField(null=True)
    merge_score = models.FloatField(null=True)
    grader_failure = models.BooleanField(default=False)
    judge_failure = models.BooleanField(default=False)
    provisional = models.BooleanField(default=False)
    reasons = models.JSONField(default=list)
    metrics = models.JSONField(default=dict)  # metrics.json as read (details included)
    metrics_sha256 = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # The run's current grade (RunGradeQuerySet.current): stored by refresh_current_grades, never set by
    # hand. Not part of what was graded: writable on a grade against a frozen revision.
    is_current = models.BooleanField(default=False)

    class Meta:
        ordering = ["run_id", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "rubric_sha256", "primary_judge"], name="one_grade_per_run_rubric_judge"
            ),
            models.UniqueConstraint(
                fields=["run"], condition=Q(is_current=True), name="one_current_grade_per_run"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run} graded {self.status}"


class JudgeGrade(models.Model):
    """The verdicts of one judge (primary or second) within a grading."""

    grade = models.ForeignKey(RunGrade, on_delete=models.CASCADE, related_name="judges")
    role = models.CharField(max_length=10, choices=JudgeRole.choices)
    judge = models.CharField(max_length=500)  # the spec as given: "anthropic:<id>", "scripted:<file>"
    scripted = models.BooleanField(default=False)  # shown wherever these verdicts appear
    model_id = models.CharField(max_length=200, blank=True)  # as the API reported it back
    failure = models.TextField(blank=True)  # a judge failure: never a pass, never a fail
    cost_usd = models.FloatField(default=0.0)
    cost_known = models.BooleanField(default=True)
    calls = models.PositiveIntegerField(default=0)
    cache_hit = models.BooleanField(default=False)
    cache_bypass = models.CharField(max_length=20, blank=True)  # "regrade_sample" / "no_cache"

    class Meta:
        ordering = ["grade_id", "role"]
        constraints = [
            models.UniqueConstraint(fields=["grade", "role"], name="one_judge_grade_per_role"),
        ]

    def __str__(self) -> str:
        return f"{self.get_role_display()} {self.judge}"


class ItemVerdict(models.Model):
    judge = models.ForeignKey(JudgeGrade, on_delete=models.CASCADE, related_name="verdicts")
    item_id = models.CharField(max_length=40)
    kind = models.CharField(max_length=20)  # blocker / non_blocker
    verdict = models.CharField(max_length=10)  # pass / fail
    reason = models.TextField()
    locations = models.JSONField(default=list)  # [{"file", "line", "side"}]: the cited lines
    model_id = models.CharField(max_length=200, blank=True)
    flagged_inconsistent = models.BooleanField(default=False)
    # On a regrade (§9): the verdict the cache held for the same input. Differs from `verdict`: the judge
    # disagreed with itself.
    previous_verdict = models.CharField(max_length=10, blank=True)
    # A number in [0, 1) drawn from the pair's identity: the agreed pairs offered for labelling are those
    # below the configured share, the same ones on every page load.
    sample_key = models.FloatField(default=0.0)

    class Meta:
        ordering = ["judge_id", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["judge", "item_id"], name="one_verdict_per_judge_and_item"),
        ]

    def __str__(self) -> str:
        return f"{self.item_id}: {self.verdict}"


class HumanLabel(models.TextChoices):
    PASS = "pass", "Pass"
    FAIL = "fail", "Fail"
    UNSURE = "unsure", "Unsure"


class QueueKind(models.TextChoices):
    JUDGES = "judges", "The two judges disagree"
    REGRADE = "regrade", "A regrade disagreed with itself"
    AGREED = "agreed", "Judges agree (sample)"
    AUDIT = "audit", "Audit (random runs, every blocker)"


def criterion_sha256(criterion: str) -> str:
    """The hash a label is tied to: the item's criterion text as the reviewer read it. A label stands while
    the criterion's text does; a new wording asks for the pair again (the old label is kept, shown as for an
    earlier wording)."""
    return hashlib.sha256(criterion.encode()).hexdigest()


class HumanVerdict(models.Model):
    """One reviewer's label on one (run, item) pair, for the item's criterion as worded when labelled
    (``criterion_sha256``) and the run's diff (``diff_sha256``): not tied to a grade, so it stands through a
    re-grade or a re-admission that leaves both unchanged. Each reviewer has their own label on a pair;
    a maintainer's adjudication (``adjudicated``) settles a pair whose reviewers disagree, beside theirs.
    Apart from the judges' rows: it never changes a score; it feeds judge-error figures."""

    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="human_verdicts")
    item_id = models.CharField(max_length=40)
    criterion_sha256 = models.CharField(max_length=64, blank=True)  # "" when the grade's rubric is not held
    diff_sha256 = models.CharField(max_length=64)  # the run's, when labelled
    verdict = models.CharField(max_length=10, choices=HumanLabel.choices)
    note = models.TextField(blank=True)
    queue = models.CharField(max_length=10, choices=QueueKind.choices)  # where the pair was labelled
    # The chance the pair had to be offered where it was labelled (1 for a disagreement, the sample share
    # for an agreed pair, the draw's for an audited run): the report's weighting (§7).
    inclusion_probability = models.FloatField(default=1.0)
    adjudicated = models.BooleanField(default=False)  # a maintainer's ruling on the reviewers' disagreement
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run_id", "item_id", "at", "pk"]
        constraints = [
            # One label per reviewer, pair and wording (one ruling per pair and wording): labelling again
            # replaces one's own. The command line's (by null) counts as one reviewer: two partial unique
            # indexes, since SQLite has no NULLS NOT DISTINCT.
            models.UniqueConstraint(
                fields=["run", "item_id", "criterion_sha256", "by", "adjudicated"],
                condition=models.Q(by__isnull=False),
                name="one_label_per_reviewer_and_wording",
            ),
            models.UniqueConstraint(
                fields=["run", "item_id", "criterion_sha256", "adjudicated"],
                condition=models.Q(by__isnull=True),
                name="one_command_line_label_per_wording",
            ),
        ]
        indexes = [models.Index(fields=["by", "at"], name="human_verdict_latest")]

    def __str__(self) -> str:
        return f"{self.item_id}: {self.verdict}"


class ReportRow(models.Model):
    """What the report reads of one grade, written once beside it so that the report page reads one row per
    run from one table instead of joining runs, grades, judges and item verdicts and decoding metrics.json.

    Filled only by ``services.report_rows.refresh_report_rows`` (the import calls it, and so must anything
    else that writes a RunGrade with its judges' rows), which also keeps ``latest`` true on exactly the
    newest grade of each run. The report takes each run's current grade (``RunGrade.objects.current()``),
    which is the newest only when no grade is against the admitted revision with the primary judge. What
    can change after a grade is written (the revision's status, the task's base date and prompts, human
    labels) is not copied here but read with it.
    """

    grade = models.OneToOneField(RunGrade, on_delete=models.CASCADE, related_name="report_row")
    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="+")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="+")
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="+")
    revision = models.ForeignKey(
        RubricRevision, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    latest = models.BooleanField(default=False)  # the run's newest grade (not always its current one)
    # The grade's is_current, kept by refresh_current_grades (the default in the schema too: earlier
    # migrations' fills write rows without it).
    current = models.BooleanField(default=False, db_default=False)
    name = models.TextField()  # the run's id in a report: its directory as imported
    arm = models.CharField(max_length=200, blank=True)
    model = models.CharField(max_length=200, blank=True)
    prompt_style = models.CharField(max_length=10, blank=True)  # run.json's; "" when it does not say
    status = models.CharField(max_length=30)
    test_pass = models.BooleanField(null=True)
    mergeable = models.BooleanField(null=True)
    merge_score = models.FloatField(null=True)
    checks_passed = models.BooleanField(null=True)  # scope and test integrity; None when not run
    provisional = models.BooleanField()  # as graded; an admitted revision overrides it when read
    # Each judge's cost on this run (grading.report.JudgeVerdicts cost_usd and tree_cost_usd; 0 when it did
    # not run), apart from its verdicts so that runs with the same verdicts are summed in one group.
    primary_cost = models.FloatField(default=0.0, db_default=0.0)
    primary_tree_cost = models.FloatField(default=0.0, db_default=0.0)
    second_cost = models.FloatField(default=0.0, db_default=0.0)
    second_tree_cost = models.FloatField(default=0.0, db_default=0.0)
    # Both judges' verdicts, shared by every row with the same (ReportVerdicts): the report sums runs by it.
    verdicts = models.ForeignKey("ReportVerdicts", on_delete=models.PROTECT, related_name="+")
    # The rest as JSON text, which the report decodes itself (identical texts once): grade.json's metrics,
    # numbers and true/false values (services.report_rows.report_metrics); the test-integrity parts not
    # measured (metrics.json details.integrity_not_measured); and the blockers a human
    # must label for a verdict on mergeable (services.runs.queue.human_label_basis), null when labels cannot
    # give one, with human_checks: scope and integrity passed.
    metrics = models.TextField()
    integrity_not_measured = models.TextField(default="[]", db_default="[]")
    human_items = models.TextField()
    human_checks = models.BooleanField(default=False)

    class Meta:
        ordering = ["run_id", "grade_id"]
        indexes = [
            models.Index(fields=["repository", "latest", "arm", "model"], name="report_row_lookup"),
            models.Index(fields=["run", "grade"], name="report_row_run"),
            # The report's cache key counts a repository's rows; the queue's label target sums the
            # measured current ones per task: both index-only scans.
            models.Index(fields=["repository", "id"], name="report_row_count"),
            models.Index(
                fields=["repository", "current", "task", "test_pass", "mergeable"], name="report_row_sums"
            ),
            # The report's sums (services.reports.sums), each read from its index alone and in its
            # order (no sort): the runs' outcomes per part, and their verdict groups with the judges' costs.
            # No column of unbounded length: an index entry has a size limit.
            models.Index(
                fields=[
                    "repository",
                    "current",
                    "task",
                    "arm",
                    "model",
                    "prompt_style",
                    "revision",
                    "provisional",
                    "status",
                    "test_pass",
                    "mergeable",
                    "merge_score",
                    "integrity_not_measured",
                    "checks_passed",
                ],
                name="report_row_outcomes",
            ),
            models.Index(
                fields=[
                    "repository",
                    "current",
                    "task",
                    "prompt_style",
                    "test_pass",
                    "checks_passed",
                    "verdicts",
                    "primary_cost",
                    "primary_tree_cost",
                    "second_cost",
                    "second_tree_cost",
                ],
                name="report_row_verdicts",
            ),
        ]

    def __str__(self) -> str:
        return f"report row of {self.name}"


class ReportVerdicts(models.Model):
    """Both judges' verdicts on a run as the report reads them, once for every report row that has the same
    (most runs of a task do): each judge's {"judge", "family", "scripted", "failure", "blockers",
    "non_blockers", "previous", "tree_judged", "cost_known"} (grading.report.JudgeVerdicts without its
    costs, which are the row's columns), or null when that judge did not run, as JSON text. Found by the
    digest of both texts; written only by ``services.report_rows``, never changed or deleted (a pair no
    row uses any more costs a row, and is used again when a run gets those verdicts)."""

    digest = models.CharField(max_length=64, unique=True)  # sha256 of primary, newline, second
    primary = models.TextField()
    second = models.TextField()

    def __str__(self) -> str:
        return f"report verdicts {self.digest[:12]}"


class QueuePair(models.Model):
    """One (grade, item) pair of the review queue (``services.runs.queue``), written beside the grade's report
    row so that a queue's page is a range of one index and its counts are counts of one table, instead of
    joining the item verdicts with themselves (primary against second judge) on every read.

    One row per kind the pair belongs to: ``judges`` (the primary and the second judge differ),
    ``agreed`` (both judges agree: every such pair, with the primary verdict's ``sample_key``; the share
    offered for labelling, ``RUNS_AGREED_SAMPLE_PERCENT``, is applied when read), ``regrade`` (either
    judge's regrade differs from the verdict its cache held; besides its other row), and ``""`` for a pair
    with a verdict from one judge only (in no queue; kept so that the filters offer every value that has
    verdicts). Rows of every grade, history too; ``current`` is the grade's ``is_current``.

    Written only by ``services.report_rows.refresh_report_rows`` (with the report rows, from the grade's
    item verdicts); ``current`` also by :func:`refresh_current_grades`, wherever the current grade moves.
    The run's sort key (task id, arm, model, repetition) is copied: none of it changes after a grade.
    """

    grade = models.ForeignKey(RunGrade, on_delete=models.CASCADE, related_name="+", db_index=False)
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="+", db_index=False)
    item_id = models.CharField(max_length=40)
    kind = models.CharField(max_length=10, blank=True)  # QueueKind, or "" (one judge only: in no queue)
    current = models.BooleanField(default=False)  # the grade's is_current
    task_id = models.CharField(max_length=200)  # the task's id (text), not its pk: the queue's order
    arm = models.CharField(max_length=200, blank=True)
    model = models.CharField(max_length=200, blank=True)
    repetition = models.IntegerField()
    sample_key = models.FloatField(default=0.0)  # the primary verdict's (0 without one)
    # The item's criterion as graded (models.criterion_sha256; "" when the grade's revision is not held): the
    # labels that stand for this pair are those given for this wording.
    criterion_sha256 = models.CharField(max_length=64, blank=True, default="", db_default="")

    class Meta:
        ordering = ["repository_id", "kind", "task_id", "arm", "model", "repetition", "grade_id", "item_id"]
        constraints = [
            models.UniqueConstraint(fields=["grade", "item_id", "kind"], name="one_queue_pair_per_kind"),
        ]
        indexes = [
            # A queue's page in its order, its counts and its filter choices: ranges of this index (the
            # sample key last, so the agreed queue's share is read from the index too).
            models.Index(
                fields=[
                    "repository",
                    "kind",
                    "current",
                    "task_id",
                    "arm",
                    "model",
                    "repetition",
                    "grade",
                    "item_id",
                    "sample_key",
                ],
                name="queue_pair_order",
            ),
            # The filters' choices: each column's distinct values, one index probe per value.
            *(
                models.Index(
                    fields=["repository", column], condition=Q(current=True), name=f"queue_pair_{column}"[:30]
                )
                for column in ("task_id", "item_id", "arm", "model")
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind or 'no queue'}: grade {self.grade_id} {self.item_id}"


class AuditDraw(models.Model):
    """A judged run drawn for the audit queue (services.runs.audit_sample): uniformly at random among the
    judged runs of its arm × model stratum, so that once every blocker the judge decided on it has a label
    the run counts for the judge-error correction. ``inclusion_probability`` is the stratum's drawn share
    (drawn / judged runs of the stratum) as of the latest draw in it: simple random sampling without
    replacement gives every drawn run that probability."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="+")
    run = models.OneToOneField(AgentRun, on_delete=models.CASCADE, related_name="audit_draw")
    arm = models.CharField(max_length=200, blank=True)
    model = models.CharField(max_length=200, blank=True)
    inclusion_probability = models.FloatField()
    stratum_runs = models.PositiveIntegerField()  # judged runs of the stratum at the latest draw
    drawn_at = models.DateTimeField(default=timezone.now)
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["repository_id", "arm", "model", "drawn_at", "pk"]

    def __str__(self) -> str:
        return f"audit draw of {self.run}"


class DisputeSource(models.TextChoices):
    DISAGREEMENT = "disagreement", "A judge disagreement"
    COMMENT = "comment", "A comment"
    ITEM = "item", "The item itself"


class Dispute(models.Model):
    """A maintainer disputes a blocker (§6 re-review): its revision needs re-review until a new revision
    is admitted or the dispute is dismissed with a reason."""

    revision = models.ForeignKey(RubricRevision, on_delete=models.CASCADE, related_name="disputes")
    item = models.ForeignKey(RubricItem, on_delete=models.CASCADE, related_name="disputes")
    source = models.CharField(max_length=20, choices=DisputeSource.choices)
    grade = models.ForeignKey(RunGrade, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    reason = models.TextField()
    opened_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    opened_at = models.DateTimeField(default=timezone.now)
    dismissed_at = models.DateTimeField(null=True, blank=True)
    dismissed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    dismissal_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-opened_at", "-pk"]
        indexes = [
            # "Needs re-review" on the task and repository pages looks up the open ones.
            models.Index(fields=["revision"], name="open_dispute_idx", condition=Q(dismissed_at=None)),
        ]

    @property
    def is_open(self) -> bool:
        return self.dismissed_at is None


class ItemFlag(models.Model):
    """A reviewer's flag on a blocker, raised from a pair of the review queue: "this criterion is wrong",
    with a reason. It changes nothing by itself; maintainers see the flags on the revision and may turn
    one into a dispute (``dispute``, then set), which is what sends the revision to re-review."""

    item = models.ForeignKey(RubricItem, on_delete=models.CASCADE, related_name="flags")
    grade = models.ForeignKey(RunGrade, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    reason = models.TextField()
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    at = models.DateTimeField(default=timezone.now)
    dispute = models.ForeignKey(
        "Dispute", on_delete=models.SET_NULL, null=True, blank=True, related_name="flags"
    )

    class Meta:
        ordering = ["item_id", "at", "pk"]

    def __str__(self) -> str:
        return f"flag on {self.item_id}"


class EvidenceChange(models.Model):
    """The code a blocker's ``path:line`` evidence cites changed between the task's base commit and the
    checkout's HEAD (found by ``manage.py check_evidence``)."""

    revision = models.ForeignKey(RubricRevision, on_delete=models.CASCADE, related_name="evidence_changes")
    item = models.ForeignKey(RubricItem, on_delete=models.CASCADE, related_name="evidence_changes")
    path = models.CharField(max_length=1000)
    line_start = models.PositiveIntegerField()
    line_end = models.PositiveIntegerField()
    base_commit = models.CharField(max_length=64)
    head_commit = models.CharField(max_length=64)
    old_text = models.TextField(blank=True)
    new_text = models.TextField(blank=True)
    new_missing = models.BooleanField(default=False)  # the file is gone at HEAD
    detected_at = models.DateTimeField(default=timezone.now)
    dismissed_at = models.DateTimeField(null=True, blank=True)
    dismissed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    dismissal_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["item_id", "path", "line_start"]
        constraints = [
            # Checking again at the same HEAD finds the same change: one row.
            models.UniqueConstraint(
                fields=["item", "path", "line_start", "line_end", "head_commit"],
                name="one_evidence_change_per_cite_and_head",
            ),
        ]

    @property
    def is_open(self) -> bool:
        return self.dismissed_at is None


class Sweep(models.Model):
    """A sweep job (services/sweeps/run.py), every run of a repository, or of a task, arm or model, graded
    with the repository's judges against each task's admitted revision, or against one approved revision
    (every result provisional). Its Job holds the state (queued, running, done, failed and why); this row
    holds what was asked and the progress the sweep page polls. Its grades are RunGrade rows with
    source = sweep, keyed as every grade is: a sweep sent again adds none twice."""

    job = models.OneToOneField(Job, on_delete=models.CASCADE, related_name="sweep")
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="sweeps")
    # What to grade: every run of the repository, narrowed by any of these.
    task = models.ForeignKey(Task, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    arm = models.CharField(max_length=200, blank=True)
    model = models.CharField(max_length=200, blank=True)
    # None: each task's admitted revision. Else this approved revision, and every result is provisional.
    revision = models.ForeignKey(
        RubricRevision, on_delete=models.CASCADE, null=True, blank=True, related_name="sweeps"
    )
    # The judges as the repository had them when the sweep was sent (full specs; keys never stored).
    judge = models.CharField(max_length=500)
    decoding = models.JSONField(default=dict, blank=True)
    second_judge = models.CharField(max_length=500, blank=True)
    second_decoding = models.JSONField(default=dict, blank=True)
    second_sample = models.FloatField(default=1.0)  # share of runs the second judge grades
    regrade_sample = models.FloatField(default=0.0)  # share of cache hits judged again (§9)
    scripted = models.BooleanField(default=False)  # either judge is the scripted one: shown wherever it is
    batch = models.BooleanField(default=False)  # judge calls sent through the provider's batch API
    # When the job ends, the report's runs in the sweep's scope as run folders in a zip (a JobFile):
    # services.sweeps.export.
    export = models.BooleanField(default=False)
    # Graded against a revision that was not admitted when the sweep was sent: every result is provisional.
    provisional = models.BooleanField(default=False)
    # Progress, written in the transaction that stores each run's grade.
    total_runs = models.PositiveIntegerField(default=0)
    done_runs = models.PositiveIntegerField(default=0)  # graded now, or already graded before
    graded_runs = models.PositiveIntegerField(default=0)  # grades this sweep stored
    judge_failures = models.PositiveIntegerField(default=0)
    no_revision_runs = models.PositiveIntegerField(default=0)  # their task has no admitted revision
    calls = models.PositiveIntegerField(default=0)
    cost_usd = models.FloatField(default=0.0)  # counts toward the repository's monthly spend cap
    cost_known = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            # The monthly spend of a repository sums its sweeps since the first of the month.
            models.Index(fields=["repository", "created_at"], name="sweep_repository_created"),
        ]

    def __str__(self) -> str:
        return f"sweep #{self.pk} of {self.repository}"

    def scope_label(self) -> str:
        parts = [f"task {self.task.task_id}" if self.task is not None else "every task"]
        if self.arm:
            parts.append(f"arm {self.arm}")
        if self.model:
            parts.append(f"model {self.model}")
        return ", ".join(parts)

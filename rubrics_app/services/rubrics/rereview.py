"""Re-review (§6): disputed blockers, and blockers whose ``path:line`` evidence changed upstream.

A revision needs re-review while it has an open dispute or an open evidence change. The task and
repository pages show the flag on the task's admitted revision, so admitting a new revision clears it
there without touching the old rows (they stay as the old revision's history); dismissing with a reason
clears it too.

Evidence is compared with real git: ``git cat-file blob <commit>:<path>`` at the task's base commit and at
the checkout's HEAD, the cited lines by number. Paths and commits are data: passed as arguments, never
through a shell, and checked before git sees them.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction
from django.template.defaultfilters import pluralize
from django.utils import timezone

from grading import Citation, Git, GitError, GitResult, parse_citations
from rubrics_app.access import Actor
from rubrics_app.celery import app
from rubrics_app.models import (
    Dispute,
    DisputeSource,
    EvidenceChange,
    EvidenceChangeLine,
    EvidenceCheckResult,
    ItemFlag,
    ItemKind,
    Job,
    JobKind,
    Repository,
    RevisionStatus,
    Role,
    RubricItem,
    RubricRevision,
    RunGrade,
    TransitionError,
)
from rubrics_app.services.jobs import JobFailed, QueueUnreachable, job_task, run, send

log = logging.getLogger(__name__)


def needs_re_review(revision_ids: Iterable[int]) -> set[int]:
    """The revisions among ``revision_ids`` with an open dispute or an open evidence change (two queries)."""
    ids = list(revision_ids)
    if not ids:
        return set()
    disputed = Dispute.objects.filter(revision_id__in=ids, dismissed_at=None).values_list(
        "revision_id", flat=True
    )
    changed = EvidenceChange.objects.filter(revision_id__in=ids, dismissed_at=None).values_list(
        "revision_id", flat=True
    )
    return set(disputed) | set(changed)


def disputed_blockers(revision_ids: Iterable[int]) -> dict[int, list[str]]:
    """The item ids of each revision's openly disputed blockers (one query): an export of such a revision
    needs an explicit confirmation that names them (the export buttons, ``export_rubrics
    --allow-disputed``)."""
    disputed: dict[int, set[str]] = {}
    for revision_id, item_id in Dispute.objects.filter(
        revision_id__in=list(revision_ids), dismissed_at=None
    ).values_list("revision_id", "item__item_id"):
        disputed.setdefault(revision_id, set()).add(item_id)
    return {revision_id: sorted(items) for revision_id, items in disputed.items()}


def open_disputes(revision: RubricRevision) -> list[Dispute]:
    """The revision's open disputes, by blocker: what an export of it overrides once confirmed."""
    return list(
        Dispute.objects.filter(revision=revision, dismissed_at=None)
        .select_related("item", "opened_by")
        .order_by("item__item_id", "pk")
    )


def dispute_records(disputes: list[Dispute]) -> list[dict[str, str]]:
    """Disputes as an export's audit row records those it went out with: their blocker, reason and who
    opened them (an export was confirmed over each: the confirmation page, ``--allow-disputed``)."""
    return [
        {
            "item_id": dispute.item.item_id,
            "reason": dispute.reason,
            "opened_by": getattr(dispute.opened_by, "username", ""),
        }
        for dispute in disputes
    ]


def overridden_disputes(revision: RubricRevision) -> list[dict[str, str]]:
    """The revision's open disputes as :func:`dispute_records`: what an export of it now overrides."""
    return dispute_records(open_disputes(revision))


def open_dispute(
    item: RubricItem, by: Actor, reason: str, source: str = DisputeSource.ITEM, grade: RunGrade | None = None
) -> Dispute:
    """Dispute a blocker of a frozen revision (maintainers): the revision needs re-review until dismissed."""
    by.require(Role.MAINTAINER, item.revision.task.repository)
    if item.kind != ItemKind.BLOCKER:
        raise TransitionError("only a blocker is disputed (a non-blocker never decides mergeable)")
    if not item.revision.is_frozen:
        raise TransitionError("a draft is edited, not disputed")
    return Dispute.objects.create(
        revision_id=item.revision_id, item=item, source=source, grade=grade, reason=reason, opened_by=by.user
    )


def flag_blocker(item: RubricItem, grade: RunGrade | None, reason: str, by: Actor) -> ItemFlag:
    """A reviewer's flag on a blocker ("this criterion is wrong"), from a pair of the review queue: shown to
    maintainers on the revision, where they may turn it into a dispute (:func:`dispute_from_flag`)."""
    by.require(Role.REVIEWER, item.revision.task.repository)
    if item.kind != ItemKind.BLOCKER:
        raise TransitionError("only a blocker is flagged (a non-blocker never decides mergeable)")
    if not reason.strip():
        raise TransitionError("a flag says why the criterion is wrong")
    return ItemFlag.objects.create(item=item, grade=grade, reason=reason, by=by.recorded_user)


def dispute_from_flag(flag: ItemFlag, by: Actor, reason: str) -> Dispute:
    """Turn a reviewer's flag into a dispute (maintainers): the revision needs re-review, and the flag
    records the dispute it became."""
    with transaction.atomic():
        dispute = open_dispute(flag.item, by, reason, DisputeSource.DISAGREEMENT, flag.grade)
        flag.dispute = dispute
        flag.save(update_fields=["dispute"])
    return dispute


def _dismiss(model: type[Dispute] | type[EvidenceChange], pk: int, by: Actor, reason: str) -> None:
    flag = model.objects.select_related("revision__task__repository").get(pk=pk)
    by.require(Role.MAINTAINER, flag.revision.task.repository)
    # Conditional on being open: a second dismissal (two maintainers at once) does not overwrite the first.
    dismissed = model.objects.filter(pk=pk, dismissed_at=None).update(
        dismissed_at=timezone.now(), dismissed_by=by.user, dismissal_reason=reason
    )
    if not dismissed:
        raise TransitionError("already dismissed")


def dismiss_dispute(dispute: Dispute, by: Actor, reason: str) -> None:
    _dismiss(Dispute, dispute.pk, by, reason)


def dismiss_evidence_change(change: EvidenceChange, by: Actor, reason: str) -> None:
    _dismiss(EvidenceChange, change.pk, by, reason)


# --- evidence ---------------------------------------------------------------------------------------------

_COMMIT = re.compile(r"^[0-9a-fA-F]{7,64}$")
MAX_CITED_LINES = 200

Cite = Citation  # the name this module had for it


def parse_cites(evidence: str) -> list[Citation]:
    """The citations of a blocker's evidence text that re-review compares (``grading.citations`` reads
    them): ranges that start at line 1 or later, end no earlier, and span fewer than MAX_CITED_LINES."""
    return [
        c
        for c in parse_citations(evidence)
        if c.start >= 1 and c.end >= c.start and c.end - c.start < MAX_CITED_LINES
    ]


class EvidenceCheckError(JobFailed):
    """The checkout cannot be compared (no checkout path, not a git repository, no HEAD)."""


# Each git call of the check: at most this long, and this much output (a cited file larger than that is
# not source a maintainer cites).
GIT_TIMEOUT = 60.0
GIT_MAX_OUTPUT = 64 * 1024 * 1024


def _git(root: Path, *args: str) -> GitResult:
    try:
        return Git(root, timeout=GIT_TIMEOUT, max_output=GIT_MAX_OUTPUT).result(*args)
    except GitError as exc:
        raise EvidenceCheckError(str(exc)) from exc


def _commit(root: Path, rev: str) -> str | None:
    result = _git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    return result.stdout.decode().strip() if result.returncode == 0 else None


def _blob_lines(root: Path, commit: str, path: str) -> list[str] | None:
    result = _git(root, "cat-file", "blob", f"{commit}:{path}")
    if result.returncode != 0:
        return None
    return result.stdout.decode("utf-8", errors="replace").splitlines()


@dataclass
class EvidenceReport:
    head: str
    changes: list[EvidenceChange] = field(default_factory=list)  # open changes found at this HEAD
    new: int = 0  # of which first found by this check
    notes: list[str] = field(default_factory=list)  # cites that could not be compared, and why


def check_evidence(repository: Repository) -> EvidenceReport:
    """Compare every blocker's cited lines of each task's admitted revision between the task's base commit
    and the checkout's HEAD; store an EvidenceChange for each difference (once per HEAD)."""
    if not repository.checkout_path:
        raise EvidenceCheckError(f"repository {repository.name} has no checkout path")
    root = Path(repository.checkout_path)
    if not root.is_dir():
        raise EvidenceCheckError(f"checkout path {root}: not a directory")
    head = _commit(root, "HEAD")
    if head is None:
        raise EvidenceCheckError(f"checkout path {root}: not a git repository with a HEAD commit")
    report = EvidenceReport(head)
    revisions = RubricRevision.objects.filter(
        task__repository=repository, status=RevisionStatus.ADMITTED
    ).select_related("task")
    for revision in revisions:
        task = revision.task
        if not task.base_commit or not _COMMIT.match(task.base_commit):
            report.notes.append(f"{task.task_id}: no base commit to compare from")
            continue
        base = _commit(root, task.base_commit)
        if base is None:
            report.notes.append(f"{task.task_id}: base commit {task.base_commit} is not in the checkout")
            continue
        for item in revision.items.filter(kind=ItemKind.BLOCKER).order_by("position", "pk"):
            for cite in parse_cites(item.evidence):
                where = f"{task.task_id} r{revision.number} {item.item_id} {cite.path}:{cite.start}"
                old = _blob_lines(root, base, cite.path)
                if old is None:
                    report.notes.append(f"{where}: not in the base commit")
                    continue
                if cite.end > len(old):
                    report.notes.append(
                        f"{where}: the base file has only {len(old)} line{pluralize(len(old))}"
                    )
                    continue
                new = _blob_lines(root, head, cite.path)
                old_text = "\n".join(old[cite.start - 1 : cite.end])
                new_text = "\n".join(new[cite.start - 1 : cite.end]) if new is not None else ""
                if new is not None and old_text == new_text:
                    continue
                found = _record_change(revision, item, cite, base, head, old_text, new_text, new is None)
                if found is not None:
                    report.changes.append(found[0])
                    report.new += int(found[1])
    return report


def _record_change(
    revision: RubricRevision,
    item: RubricItem,
    cite: Cite,
    base: str,
    head: str,
    old_text: str,
    new_text: str,
    new_missing: bool,
) -> tuple[EvidenceChange, bool] | None:
    """The open change for this cite, moved on to ``head`` (one open row per cite however often HEAD moves),
    or a new one; None when a maintainer already dismissed the change found at this very HEAD."""
    cited = EvidenceChange.objects.filter(item=item, path=cite.path, line_start=cite.start, line_end=cite.end)
    with transaction.atomic():
        current = cited.select_for_update().filter(dismissed_at=None).first()
        if current is not None:
            if current.head_commit != head:
                current.head_commit, current.new_text, current.new_missing = head, new_text, new_missing
                current.save(update_fields=["head_commit", "new_text", "new_missing"])
            return current, False
        if cited.filter(head_commit=head).exists():
            return None
        change = EvidenceChange.objects.create(
            revision=revision,
            item=item,
            path=cite.path,
            line_start=cite.start,
            line_end=cite.end,
            base_commit=base,
            head_commit=head,
            old_text=old_text,
            new_text=new_text,
            new_missing=new_missing,
        )
        return change, True


def re_review_context(revision: RubricRevision | None) -> dict[str, Any]:
    """What the task page shows about the admitted revision's re-review: open disputes, open evidence changes
    and the blockers a maintainer may dispute."""
    if revision is None:
        return {"open_disputes": [], "open_evidence_changes": [], "disputable_blockers": [], "open_flags": []}
    return {
        "open_disputes": list(
            revision.disputes.filter(dismissed_at=None)
            .select_related("item", "opened_by")
            .order_by("opened_at")
        ),
        "open_evidence_changes": list(
            revision.evidence_changes.filter(dismissed_at=None)
            .select_related("item")
            .order_by("item_id", "pk")
        ),
        "disputable_blockers": list(revision.items.filter(kind=ItemKind.BLOCKER).order_by("position", "pk")),
        "open_flags": list(
            ItemFlag.objects.filter(item__revision=revision, dispute=None)
            .select_related("item", "by", "grade__run")
            .order_by("at", "pk")
        ),
    }


# --- the evidence check job ---------------------------------------------------------------------------------


@transaction.atomic
def start_evidence_check(repository: Repository, by: Actor) -> Job:
    """``by``: a maintainer, or the command line or the periodic job (``Actor.command_line()``)."""
    by.require(Role.MAINTAINER, repository)
    job = Job.objects.create(kind=JobKind.CHECK_EVIDENCE, repository=repository, created_by=by.recorded_user)
    send(check_repository_evidence, job.pk)
    return job


def _check_evidence(job: Job) -> EvidenceCheckResult:
    if job.repository is None:
        raise EvidenceCheckError("the repository of this job is gone")
    return evidence_result(check_evidence(job.repository))


def evidence_result(report: EvidenceReport) -> EvidenceCheckResult:
    """What the job stores, and the command prints, of an evidence check."""
    return EvidenceCheckResult(
        head=report.head,
        open=len(report.changes),
        new=report.new,
        changes=[
            EvidenceChangeLine(
                task=c.revision.task.task_id,
                revision=c.revision.number,
                item=c.item.item_id,
                cite=f"{c.path}:{c.line_start}-{c.line_end}",
                old=c.old_text,
                new=None if c.new_missing else c.new_text,
            )
            for c in report.changes
        ],
        notes=report.notes,
    )


@job_task(JobKind.CHECK_EVIDENCE)
def check_repository_evidence(job_id: int) -> None:
    """Compare every admitted blocker's cited lines at the base commit with the checkout's HEAD (§6)."""
    run(job_id, _check_evidence)


@app.task(name="rubrics_app.tasks.check_evidence_everywhere", ignore_result=True)
def check_evidence_everywhere() -> None:
    """The periodic task (Celery beat, RUNS_EVIDENCE_CHECK_HOURS): one evidence check per repository that has
    a checkout path."""
    for repository in Repository.objects.exclude(checkout_path=""):
        try:
            start_evidence_check(repository, by=Actor.command_line())
        except QueueUnreachable:
            # Its job is failed; the others would fail the same way: the next period checks them all.
            log.warning("evidence checks not sent: the job queue is unreachable")
            return

"""Admitted rubrics sent to their repository: a branch pushed to its remote and, on GitHub, a pull request.

A repository's remote (``RemoteSetting``) is a GitHub ``OWNER/NAME`` or any git URL, and the name of the
variable of the worker's environment that holds its token, as drafting names its GitHub token: the value is
read when the job runs and never stored. The job commits the revision's files on a new branch of the
public checkout (``exports.write_to_checkout``: its work tree, index and HEAD stay as they were), pushes
that branch with the token given through a credential helper (``grading.push_branch``), and on GitHub
opens the pull request (``grading.open_pull_request``), whose body lists the revision, its approvals, its
calibration and any dispute the maintainer overrode. A plain git remote gets the push and no pull request.

Tokens go to GITHUB_WEB_URL and DRAFT_GITHUB_API_URL, and to a plain remote only when whoever runs the
workers lists its origin in REMOTE_TOKEN_ORIGINS: a maintainer names the remote, not where secrets go.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.template.defaultfilters import pluralize
from django.utils import timezone

from grading import (
    GitError,
    GitHubError,
    InputError,
    Remote,
    open_pull_request,
    parse_remote,
    push_branch,
)
from rubrics_app.access import Actor
from rubrics_app.models import (
    AuditVerb,
    CalibrationRun,
    CalibrationStatus,
    Dispute,
    ExportResult,
    ItemKind,
    Job,
    RemoteSetting,
    Repository,
    ReviewState,
    RevisionStatus,
    Role,
    RubricRevision,
    TransitionError,
)
from rubrics_app.services import audit
from rubrics_app.services.jobs import JobFailed
from rubrics_app.services.rubrics import rereview
from rubrics_app.services.token_env import TOKEN_ENV_RE

BRANCH_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,199}")


class PullRequestError(JobFailed):
    pass


class RemoteSettingError(ValueError):
    """A remote setting that is refused; ``field`` is the form field it belongs to."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


def _branch_problem(name: str) -> str | None:
    if not BRANCH_RE.fullmatch(name) or ".." in name or "//" in name or name.endswith((".lock", "/", ".")):
        return "letters, digits, '.', '_', '-' and '/', not '..', not ending in '/', '.' or '.lock'"
    return None


def _origin(url: str) -> str | None:
    split = urlsplit(url)
    if split.scheme not in ("https", "http") or not split.netloc:
        return None
    return f"{split.scheme}://{split.netloc}".lower()


def token_allowed(remote: Remote) -> bool:
    """Whether the worker's token may be offered to this remote (see the module docstring)."""
    origin = remote.token_origin
    if origin is None:
        return False
    allowed = {_origin(settings.GITHUB_WEB_URL), *(_origin(o) for o in settings.REMOTE_TOKEN_ORIGINS)}
    return origin.lower() in allowed - {None}


def remote_of(setting: RemoteSetting) -> Remote:
    return parse_remote(setting.remote, settings.GITHUB_WEB_URL)


@transaction.atomic
def set_remote_setting(
    repository: Repository, *, by: Actor, remote: str, token_env: str = "", base_branch: str = "main"
) -> RemoteSetting | None:
    """Save (or, with an empty ``remote``, remove) where the repository's rubrics are sent;
    RemoteSettingError names the field of a value that is refused."""
    by.require(Role.MAINTAINER, repository)
    remote, token_env, base_branch = remote.strip(), token_env.strip(), base_branch.strip() or "main"
    if not remote:
        if token_env:
            raise RemoteSettingError("remote", "a token variable needs a remote to be sent to: name one")
        current = RemoteSetting.objects.select_for_update().filter(repository=repository).first()
        if current is not None:
            current.delete()
            _record_remote(repository, by, _remote_dict(current), None)
        return None
    try:
        parsed = parse_remote(remote, settings.GITHUB_WEB_URL)
    except InputError as exc:
        raise RemoteSettingError("remote", exc.message) from None
    if token_env:
        if not TOKEN_ENV_RE.fullmatch(token_env):
            raise RemoteSettingError(
                "token_env", "the variable is GITHUB_TOKEN or GITHUB_TOKEN_<SUFFIX> (capitals, digits, _)"
            )
        if not token_allowed(parsed):
            raise RemoteSettingError(
                "token_env",
                "no token is sent to this remote: only to GitHub (OWNER/NAME) or an https origin the server "
                "lists in REMOTE_TOKEN_ORIGINS; leave the variable empty to push without one",
            )
    if problem := _branch_problem(base_branch):
        raise RemoteSettingError("base_branch", problem)
    setting = RemoteSetting.objects.select_for_update().filter(repository=repository).first()
    setting = setting or RemoteSetting(repository=repository)
    before = _remote_dict(setting) if setting.pk else None
    setting.remote, setting.token_env, setting.base_branch = remote, token_env, base_branch
    setting.updated_at = timezone.now()
    setting.updated_by = by.recorded_user
    setting.save()
    _record_remote(repository, by, before, _remote_dict(setting))
    return setting


def _remote_dict(setting: RemoteSetting) -> dict[str, str]:
    # The variable's name only: its value is read by the worker when a job runs and never stored.
    return {"remote": setting.remote, "token_env": setting.token_env, "base_branch": setting.base_branch}


def _record_remote(
    repository: Repository, by: Actor, before: dict[str, str] | None, after: dict[str, str] | None
) -> None:
    """The audit row of a saved (or removed: ``after`` None) remote, as the judge and draft settings
    record theirs: what it was and what it is."""
    audit.record(
        AuditVerb.REMOTE_SET, actor=by.user, repository=repository, detail={"before": before, "after": after}
    )


# --- the pull request's body ------------------------------------------------------------------------------


def code(text: str) -> str:
    """``text`` as a Markdown code span: nothing in it is read as Markdown, a link or an @mention."""
    text = " ".join(str(text).split()) or "-"
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}" if longest else f"`{text}`"


def fenced(text: str) -> str:
    """Untrusted text (a reason) as a fenced block no line of it can close."""
    text = "".join(c for c in str(text) if c in "\n\t" or (ord(c) >= 32 and ord(c) != 127)).strip("\n")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def _who(user: object) -> str:
    return code(getattr(user, "username", "") or "someone no longer here") if user else "nobody recorded"


def _when(moment: object) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else "at an unrecorded time"  # type: ignore[attr-defined]


def _rate(count: int, measured: int) -> str:
    return f"{count} of {measured} ({count / measured:.1%})" if measured else f"{count} of 0 measured"


def pull_request_body(revision: RubricRevision, overridden: list[Dispute], paths: list[str]) -> str:
    """The pull request's Markdown: revision, approvals, calibration, disputes overridden, files. Every name
    is a code span and every reason a fenced block: GitHub renders it, and reasons are anyone's text."""
    task = revision.task
    lines = [
        f"The admitted rubric of task {code(task.task_id)}, revision {revision.number} "
        f"(content sha256 {code(revision.content_sha256 or 'not recorded')}), sent from the rubrics app "
        f"(repository {code(task.repository.name)}).",
        "",
        "### Approvals",
        f"- Revision approved by {_who(revision.approved_by)} on {_when(revision.approved_at)}; "
        f"admitted by {_who(revision.admitted_by)} on {_when(revision.admitted_at)}.",
    ]
    for item in revision.items.select_related("reviewed_by").order_by("kind", "position", "pk"):
        state = "approved" if item.review_state == ReviewState.APPROVED else item.review_state
        kind = "blocker" if item.kind == ItemKind.BLOCKER else "non-blocker"
        lines.append(
            f"- {kind} {code(item.item_id)}: {state} by {_who(item.reviewed_by)} on {_when(item.reviewed_at)}"
        )
    lines += ["", "### Calibration"]
    run = (
        CalibrationRun.objects.filter(revision=revision, status=CalibrationStatus.PASSED)
        .order_by("-finished_at", "-pk")
        .first()
    )
    if run is None:
        lines.append("- No passing calibration run is recorded.")
    else:
        held = run.rows.filter(holds=True).count()
        total = run.rows.count()
        lines.append(
            f"- Calibration #{run.pk} with {code(run.judge)}: {held} of {total} row{pluralize(total)} held"
            f" (finished {_when(run.finished_at)})."
        )
        if run.injection_suite:
            lines.append(
                f"- Injection suite: attack success {_rate(run.attack_successes, run.attacks_measured)}"
                f" ({run.attacks_not_measured} not measured); benign drift "
                f"{_rate(run.benign_drifts, run.benign_measured)} ({run.benign_not_measured} not measured)."
            )
        else:
            lines.append("- Injection suite: not run (no attack success or benign drift measured).")
    lines += ["", "### Disputes overridden"]
    if not overridden:
        lines.append("None: no blocker of this revision was disputed when it was sent.")
    for dispute in overridden:
        lines += [
            f"- Blocker {code(dispute.item.item_id)}, disputed by {_who(dispute.opened_by)} on "
            f"{_when(dispute.opened_at)}, sent anyway. The dispute's reason:",
            "",
            fenced(dispute.reason),
            "",
        ]
    lines += ["", "### Files", *(f"- {code(path)}" for path in paths)]
    return "\n".join(lines).rstrip() + "\n"


# --- the job (started and run by services.rubrics.exports, whose export job it is) -------------------------


def check_can_send(revision: RubricRevision, branch: str | None) -> None:
    """TransitionError when the revision cannot be sent: no remote, no checkout, a bad branch name."""
    repository = revision.task.repository
    if revision.status != RevisionStatus.ADMITTED:
        raise TransitionError("only an admitted revision is sent as a pull request")
    if not RemoteSetting.objects.filter(repository=repository).exists():
        raise TransitionError(f"repository {repository.name} names no remote: set one on its settings page")
    if not repository.checkout_path:
        raise TransitionError(f"repository {repository.name} has no checkout path to build the branch in")
    if branch and (problem := _branch_problem(branch)):
        raise TransitionError(f"branch {branch!r}: {problem}")


@dataclass
class Plan:
    """What the job sends, settled before anything is written."""

    remote: Remote
    token: str | None
    branch: str
    base: str
    open_disputes: list[Dispute]  # each confirmed by the maintainer: the pull request and audit name them


def plan_pull_request(job: Job, revision: RubricRevision) -> Plan:
    """The remote, token and branch of the job; PullRequestError (nothing written) when one is missing or a
    blocker was disputed without the maintainer's confirmation."""
    repository = revision.task.repository
    setting = RemoteSetting.objects.filter(repository=repository).first()
    if setting is None:
        raise PullRequestError(f"repository {repository.name} names no remote any more")
    try:
        remote = remote_of(setting)
    except InputError as exc:
        raise PullRequestError(f"the remote setting: {exc.message}") from None
    token = None
    if setting.token_env:
        if not TOKEN_ENV_RE.fullmatch(setting.token_env) or not token_allowed(remote):
            raise PullRequestError(f"the token variable {setting.token_env} is not used for {remote.url}")
        token = os.environ.get(setting.token_env) or None
        if token is None:
            raise PullRequestError(f"{setting.token_env} is not set in the worker's environment")
    open_disputes = rereview.open_disputes(revision)
    confirmed = set(job.params.get("overriding") or [])
    disputed = {d.item.item_id for d in open_disputes}
    if unconfirmed := sorted(disputed - confirmed):
        raise PullRequestError(f"{', '.join(unconfirmed)} disputed (needs re-review) and not confirmed")
    branch = job.params.get("branch") or f"rubrics/{revision.task.task_id}-r{revision.number}-job{job.pk}"
    return Plan(remote, token, branch, setting.base_branch, open_disputes)


def push_and_open(
    plan: Plan, revision: RubricRevision, root: Path, paths: list[str], commit: str | None, user: Any
) -> ExportResult:
    """Push the branch already committed in the checkout at ``root`` and, on GitHub, open its pull
    request; ``user`` is who the audit trail names (the job's starter, whose permission start_export
    asked)."""
    try:
        push_branch(root, plan.remote, plan.branch, plan.token)
    except GitError as exc:
        raise PullRequestError(
            f"committed on branch {plan.branch} of the checkout, but the push failed: {exc.message}"
        ) from None
    number = url = None
    note = ""
    if plan.remote.github:
        try:
            opened = open_pull_request(
                plan.remote.github,
                plan.token or "",
                head=plan.branch,
                base=plan.base,
                title=f"Rubrics: admitted rubric of {revision.task.task_id} (revision {revision.number})",
                body=pull_request_body(revision, plan.open_disputes, paths),
                api_url=settings.DRAFT_GITHUB_API_URL,
            )
        except (GitHubError, InputError) as exc:
            raise PullRequestError(
                f"pushed branch {plan.branch} to {plan.remote.github}, but the pull request was not opened: "
                f"{exc}"
            ) from None
        number, url = opened.number, opened.url
    else:
        note = (
            f"Pushed branch {plan.branch} to {plan.remote.url}. It is a plain git remote, not a GitHub "
            "repository: no pull request was opened (name the remote OWNER/NAME for one)."
        )
    target = (
        f"pull request {url} from branch {plan.branch}"
        if plan.remote.github
        else f"branch {plan.branch} pushed to {plan.remote.url}"
    )
    audit.record(
        AuditVerb.EXPORTED,
        actor=user,
        revision=revision,
        detail={
            "target": target,
            "as": "pull request" if plan.remote.github else "push",
            "remote": plan.remote.url,
            "branch": plan.branch,
            "commit": commit,
            "pull_request": url,
            "overridden": rereview.dispute_records(plan.open_disputes),
        },
    )
    return ExportResult(
        root=str(root),
        paths=paths,
        branch=plan.branch,
        commit=commit,
        remote=plan.remote.github or plan.remote.url,
        pull_request_number=number,
        pull_request_url=url,
        note=note,
    )

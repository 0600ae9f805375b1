"""Drafting a task's rubric from its merged PR (§6), as a Celery job: settings, starting, running (storing
what came back is ``services.drafting.store``).

The job fetches the PR (GitHub's REST API, or the export uploaded with the request), builds the drafter's
input with ``grading.draft.build_draft_input`` from the task prompt, the PR and the repository's tree at the
task's base commit, asks the drafter, checks the draft (``grading.draft.check_draft``) and stores it as a new
draft revision with its problems listed, whatever they are: a draft is never fixed silently.

What the drafter reads is only what is passed to ``build_draft_input`` here: the task's prompt and base
commit, the PR and the checkout. Agent runs, their diffs and verdicts (rubrics_app.models.runs) are never
loaded by this module; a rubric fitted to observed failures would overstate the gap it measures.

Secrets stay in the worker's environment: the model's API key as the SDK reads it, and the GitHub token in
the variable the repository's setting names (never its value, in the database or a page).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from grading import (
    BaseTree,
    DraftError,
    GitHubError,
    GitHubSource,
    InputError,
    PullRequest,
    build_draft_input,
    check_draft,
    draft_rubric,
    glob_error,
    load_price_table,
    make_drafter,
    parse_github_repository,
    parse_json,
    parse_pr_export,
    render_draft_request,
)
from rubrics_app.access import Actor
from rubrics_app.models import (
    AuditVerb,
    DraftResult,
    DraftSetting,
    DraftStep,
    Job,
    JobKind,
    JobStatus,
    Repository,
    Role,
    RubricDraft,
    RubricRevision,
    Task,
)
from rubrics_app.services import audit
from rubrics_app.services.drafting.store import MAX_COUNT, store_draft
from rubrics_app.services.jobs import JobFailed, job_task, run, send
from rubrics_app.services.token_env import TOKEN_ENV_RE

log = logging.getLogger(__name__)

# Job.progress at the start of each step.
PROGRESS = {
    DraftStep.FETCHING: 5,
    DraftStep.READING: 20,
    DraftStep.DRAFTING: 30,
    DraftStep.CHECKING: 80,
    DraftStep.STORING: 90,
}


class DraftSettingError(ValueError):
    """A drafting setting that is refused; ``field`` is the form field it belongs to."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


class DraftRequestError(ValueError):
    """A drafting request that cannot be sent (nothing is stored); ``field`` names the form field."""

    def __init__(self, field: str | None, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}" if field else message)


class DraftFailed(JobFailed):
    """The job stopped at a step; the message says which and why."""


# --- settings -----------------------------------------------------------------------------------------------


def check_drafter(spec: str) -> str:
    spec = spec.strip()
    try:
        # As the command line checks it: anthropic, a full model id. Nothing is called: the key is a
        # placeholder.
        make_drafter(spec, api_key="not-used-for-checking")
    except InputError as exc:
        # A scripted drafter's file: say which file the problem is in.
        raise DraftSettingError(
            "drafter", f"{exc.file}: {exc.message}" if exc.file else exc.message
        ) from None
    return spec


@transaction.atomic
def set_draft_settings(
    repository: Repository,
    *,
    by: Actor,
    drafter: str,
    github_repository: str = "",
    use_token: bool = False,
    token_env: str = "GITHUB_TOKEN",
    guidance_globs: list[str] | None = None,
) -> DraftSetting:
    """Save the repository's drafting settings; DraftSettingError names the field of a value that is
    refused."""
    by.require(Role.MAINTAINER, repository)
    drafter = check_drafter(drafter)
    github_repository = github_repository.strip()
    if github_repository:
        # GitHub's own rules for the two parts: '../..' or 'octo/..' would send the worker's token to
        # paths outside /repos/OWNER/NAME/.
        try:
            github_repository = "/".join(parse_github_repository(github_repository))
        except InputError as exc:
            raise DraftSettingError("github_repository", exc.message) from None
    token_env = token_env.strip()
    if use_token and not github_repository:
        raise DraftSettingError("use_token", "a token is only used to read a GitHub repository: name one")
    if use_token and not TOKEN_ENV_RE.fullmatch(token_env):
        raise DraftSettingError(
            "token_env", "the variable is GITHUB_TOKEN or GITHUB_TOKEN_<SUFFIX> (capitals, digits, _)"
        )
    globs = list(guidance_globs) if guidance_globs is not None else None
    for glob in globs or []:
        problem = glob_error(glob)
        if problem:
            raise DraftSettingError("guidance_globs", f"{glob}: {problem}")
    setting = DraftSetting.objects.select_for_update().filter(repository=repository).first()
    if setting is None:
        setting = DraftSetting(repository=repository)
    before = _setting_dict(setting) if setting.pk else None
    setting.drafter = drafter
    setting.github_repository = github_repository
    setting.use_token = use_token
    setting.token_env = token_env if use_token else (token_env or "GITHUB_TOKEN")
    if globs is not None:
        setting.guidance_globs = globs
    setting.updated_at = timezone.now()
    setting.updated_by = by.user if getattr(by.user, "is_authenticated", False) else None
    setting.save()
    audit.record(
        AuditVerb.DRAFT_SETTINGS_SET,
        actor=by.user,
        repository=repository,
        detail={"before": before, "after": _setting_dict(setting)},
    )
    return setting


def _setting_dict(setting: DraftSetting) -> dict[str, Any]:
    return {
        "drafter": setting.drafter,
        "github_repository": setting.github_repository,
        "use_token": setting.use_token,
        "token_env": setting.token_env,
        "guidance_globs": list(setting.guidance_globs or []),
    }


# --- starting a drafting job --------------------------------------------------------------------------------


def read_pr_export(raw: bytes, name: str) -> tuple[str, PullRequest]:
    """An uploaded PR export: its text and the PR in it. DraftRequestError naming the file and the field."""
    if len(raw) > settings.RUBRIC_UPLOAD_MAX_BYTES:
        raise DraftRequestError("pr_export", f"{name}: larger than {settings.RUBRIC_UPLOAD_MAX_BYTES} bytes")
    try:
        pr = parse_pr_export(parse_json(raw, name), name)
    except InputError as exc:
        raise DraftRequestError("pr_export", str(exc)) from None
    return raw.decode("utf-8"), pr


def start_draft(
    task: Task,
    by: Actor,
    *,
    pr_number: int | None = None,
    pr_export: bytes | None = None,
    pr_export_name: str = "pr.json",
) -> RubricDraft:
    """:func:`request_draft` for callers that need not say whether the drafting was joined."""
    draft, _ = request_draft(
        task, by, pr_number=pr_number, pr_export=pr_export, pr_export_name=pr_export_name
    )
    return draft


def export_sha256(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def _under_way(
    task: Task, *, github_repository: str, pr_number: int | None, sha256: str
) -> RubricDraft | None:
    """The drafting of ``task`` from the same source whose job is queued or running, if any."""
    drafts = RubricDraft.objects.filter(
        task=task, job__status__in=[JobStatus.QUEUED, JobStatus.RUNNING], revision=None
    )
    if pr_number is not None:
        drafts = drafts.filter(pr_number=pr_number, github_repository=github_repository)
    else:
        drafts = drafts.filter(pr_number=None, pr_export_sha256=sha256)
    return drafts.select_related("job").order_by("created_at", "pk").first()


@transaction.atomic
def request_draft(
    task: Task,
    by: Actor,
    *,
    pr_number: int | None = None,
    pr_export: bytes | None = None,
    pr_export_name: str = "pr.json",
) -> tuple[RubricDraft, bool]:
    """Queue a drafting job for ``task`` from a GitHub PR number or an uploaded export (exactly one), sent
    once committed, and whether it is new: a drafting of the same task from the same source (PR, or export
    with the same sha256) that is queued or running is joined instead, so a second click makes no second
    draft. A finished one is drafted again on purpose. DraftRequestError
    (nothing stored) when the request cannot be drafted, naming the field."""
    # The task's row is the lock: two requests for the same task wait for each other here, so the second
    # sees the first one's drafting and joins it.
    task = Task.objects.select_for_update(of=("self",)).select_related("repository").get(pk=task.pk)
    repository = task.repository
    by.require(Role.MAINTAINER, repository)
    setting = DraftSetting.objects.filter(repository=repository).first()
    if setting is None:
        raise DraftRequestError(None, f"{repository.name} has no drafting settings: set the drafter first")
    if (pr_number is None) == (pr_export is None):
        raise DraftRequestError(None, "give a PR number or a PR export file (one of them)")
    if not task.base_commit:
        raise DraftRequestError(
            None, f"task {task.task_id} has no base commit: the base source is read there"
        )
    if not repository.checkout_path:
        raise DraftRequestError(
            None, f"{repository.name} has no checkout path: the base source is read there"
        )
    export_text = ""
    if pr_number is not None:
        if not setting.github_repository:
            raise DraftRequestError(
                "pr_number", "the repository's drafting settings name no GitHub repository: upload an export"
            )
        if not 0 < pr_number <= MAX_COUNT:
            raise DraftRequestError("pr_number", "a PR number is a whole number of at least 1")
    else:
        assert pr_export is not None
        export_text, _ = read_pr_export(pr_export, pr_export_name)
    github_repository = setting.github_repository if pr_number is not None else ""
    sha256 = export_sha256(pr_export) if pr_export is not None else ""
    current = _under_way(task, github_repository=github_repository, pr_number=pr_number, sha256=sha256)
    if current is not None:
        return current, False
    user = by.user if getattr(by.user, "is_authenticated", False) else None
    job = Job.objects.create(
        kind=JobKind.DRAFT_RUBRIC,
        repository=repository,
        created_by=user,
        params={"task": task.task_id, "pr": pr_number, "export": pr_export_name if pr_export else None},
    )
    draft = RubricDraft.objects.create(
        task=task,
        job=job,
        github_repository=github_repository,
        pr_number=pr_number,
        pr_export=export_text,
        pr_export_sha256=sha256,
        pr_export_name=pr_export_name if pr_export is not None else "",
        use_token=setting.use_token and pr_number is not None,
        token_env=setting.token_env if setting.use_token and pr_number is not None else "",
        guidance_globs=list(setting.guidance_globs or []),
        drafter=setting.drafter,
        created_by=user,
    )
    send(draft_rubric_job, job.pk)
    return draft, True


# --- running it ---------------------------------------------------------------------------------------------


def _step(draft: RubricDraft, step: DraftStep) -> None:
    draft.step = step
    RubricDraft.objects.filter(pk=draft.pk).update(step=step)
    if draft.job_id is not None and step in PROGRESS:
        Job.objects.filter(pk=draft.job_id).update(progress=PROGRESS[step])


def _fail(draft: RubricDraft, why: str) -> DraftFailed:
    message = f"{draft.get_step_display()}: {why}"
    RubricDraft.objects.filter(pk=draft.pk).update(error=message)
    return DraftFailed(message)


def _fetch(draft: RubricDraft) -> tuple[PullRequest, list[str]]:
    """The PR, and what the fetch found worth telling the maintainer (a repository that moved)."""
    if draft.pr_number is None:
        name = draft.pr_export_name or "pr.json"
        try:
            return parse_pr_export(parse_json(draft.pr_export.encode("utf-8"), name), name), []
        except InputError as exc:
            raise _fail(draft, str(exc)) from None
    token = None
    if draft.use_token:
        token = os.environ.get(draft.token_env)
        if not token:
            raise _fail(draft, f"the worker's environment has no {draft.token_env} (the GitHub token)")
    try:
        source = GitHubSource(draft.github_repository, token, base_url=settings.DRAFT_GITHUB_API_URL)
        pr = source.fetch(draft.pr_number)
    except (GitHubError, InputError) as exc:
        raise _fail(draft, str(exc)) from None
    return pr, source.notes()


def task_prompt(task: Task) -> str:
    return task.spec_prompt or task.issue_prompt


def run_draft(job: Job) -> DraftResult:
    """The job's body: every step, then the stored draft revision. DraftFailed says at which step and why."""
    draft = RubricDraft.objects.select_related("task__repository", "created_by", "revision").get(job=job)
    if draft.revision is not None:
        # A job the reaper queued again after its worker stored the draft: nothing to do twice.
        return _result(draft, draft.revision)
    try:
        return _run_steps(draft)
    except DraftFailed:
        raise
    except Exception as exc:
        log.exception("drafting #%s failed at %s", draft.pk, draft.step)
        raise _fail(draft, f"internal error: {type(exc).__name__}: {exc}") from exc


def _result(draft: RubricDraft, revision: RubricRevision) -> DraftResult:
    return DraftResult(
        draft=draft.pk,
        revision=revision.pk,
        revision_number=revision.number,
        model_id=draft.model_id,
        problems=len(draft.problems or []),
        cost_usd=draft.cost_usd,
        cost_known=draft.cost_known,
    )


def _run_steps(draft: RubricDraft) -> DraftResult:
    task = draft.task
    _step(draft, DraftStep.FETCHING)
    pr, notes = _fetch(draft)

    _step(draft, DraftStep.READING)
    try:
        tree = BaseTree(Path(task.repository.checkout_path), task.base_commit)
        # The drafter's whole input: the task prompt, the PR, the tree at the base commit. Nothing else.
        draft_input = build_draft_input(
            task_id=task.task_id,
            task_prompt=task_prompt(task),
            pr=pr,
            tree=tree,
            guidance_globs=list(draft.guidance_globs or []),
        )
    except InputError as exc:
        raise _fail(draft, str(exc)) from None

    _step(draft, DraftStep.DRAFTING)
    try:
        backend = make_drafter(draft.drafter)
        prices = load_price_table()
    except InputError as exc:
        raise _fail(draft, str(exc)) from None
    request = render_draft_request(draft_input)
    body = json.dumps(backend.render(request), indent=2, ensure_ascii=False)
    RubricDraft.objects.filter(pk=draft.pk).update(request_body=body, input_sha256=draft_input.sha256())
    started = time.monotonic()
    try:
        result = draft_rubric(draft_input, backend, prices=prices, request=request)
    except DraftError as exc:
        raise _fail(draft, str(exc).removeprefix("drafting: ")) from None
    seconds = time.monotonic() - started

    _step(draft, DraftStep.CHECKING)
    problems = check_draft(result, tree)
    # Not faults of the draft, but what the maintainer reviewing it must know: the page lists them with
    # the checks' problems (the drafting record has one list).
    problems += [f"fetching the PR: {note}" for note in notes]
    problems += [f"drafting input: left out for size: {item}" for item in result.left_out]

    _step(draft, DraftStep.STORING)
    revision = store_draft(draft, result, problems, seconds=seconds)
    draft.refresh_from_db()
    return _result(draft, revision)


# --- the drafting job ---------------------------------------------------------------------------------------


@job_task(JobKind.DRAFT_RUBRIC)
def draft_rubric_job(job_id: int) -> None:
    """Draft a task's rubric from its merged PR (§6) and store it as a draft revision with its problems."""
    run(job_id, run_draft)

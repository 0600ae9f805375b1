"""Export admitted revisions as rubric.json, as a zip, or into a checkout (also as a job).

Export reads only admitted revisions and writes each file atomically (temp file + os.replace) under
``tasks/<task-id>/``, touching no other file; with a branch, it commits on a new branch of the checkout
instead.
"""

from __future__ import annotations

import io
import posixpath
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction

from grading import (
    NO_COMMANDS_CONFIG,
    Git,
    GitError,
    InputError,
    Rubric,
    commit_on_new_branch,
    write_atomic,
)
from rubrics_app.access import Actor
from rubrics_app.models import (
    TASK_FILES,
    AuditVerb,
    ExportResult,
    Job,
    JobKind,
    Repository,
    RevisionStatus,
    Role,
    RubricRevision,
    TransitionError,
)
from rubrics_app.services import audit
from rubrics_app.services.jobs import JobFailed, job_task, run, send
from rubrics_app.services.rubrics import pull_requests
from rubrics_app.services.rubrics.rereview import overridden_disputes


class ExportError(JobFailed):
    pass


def _require_admitted(revision: RubricRevision) -> Rubric:
    if revision.status != RevisionStatus.ADMITTED:
        raise TransitionError(
            f"only an admitted revision is exported (revision {revision.number} is {revision.status})"
        )
    return revision.to_rubric()


def rubric_json_bytes(revision: RubricRevision) -> bytes:
    return revision.rubric_json_bytes()


def record_export(revision: RubricRevision, by: Any, target: str, **fields: Any) -> None:
    """The audit row of one export: ``target`` says where it went in words (the activity line shows it),
    ``fields`` the same as data, and every dispute open on the revision is recorded as overridden, with
    its reason."""
    detail = {**fields, "target": target, "overridden": overridden_disputes(revision)}
    audit.record(AuditVerb.EXPORTED, actor=by, revision=revision, detail=detail)


def export_rubric_json(revision: RubricRevision, *, by: Actor) -> bytes:
    """rubric.json of an admitted revision, exactly what `rubric validate` accepts. Anyone who reads the
    revision (viewers too) downloads it: it holds nothing the revision's page does not show."""
    by.require(Role.VIEWER, revision.task.repository)
    _require_admitted(revision)
    record_export(revision, by.user, "download of rubric.json", **{"as": "rubric.json"})
    return rubric_json_bytes(revision)


def _task_files_out(revision: RubricRevision, private: bool = False) -> dict[str, bytes]:
    """The files of tasks/<task-id>/: rubric.json and its calib diffs; ``private`` (the held-out set, which
    no public checkout holds) adds what `rubric check` reads besides: task.json, oracle.diff,
    oracle_grade.json and tests_base.txt, as calibration writes them (the ones the task has)."""
    files = {"rubric.json": rubric_json_bytes(revision)}
    for diff in revision.ordered_diffs():
        files[posixpath.normpath(diff.path)] = bytes(diff.content)
    if private:
        from rubrics_app.services.calibration.inputs import calibration_files

        for path, data in calibration_files(revision).items():
            name = path.removeprefix("task/")
            if name in ("task.json", *TASK_FILES) and data:
                files[name] = data
    return files


def export_files(revision: RubricRevision, *, by: Actor) -> dict[str, bytes]:
    """The files of tasks/<task-id>/ of an admitted revision (rubric.json and its calib diffs), as the zip
    holds them: what the API's pull hands out."""
    by.require(Role.MAINTAINER, revision.task.repository)
    _require_admitted(revision)
    record_export(revision, by.user, "pull through the API", **{"as": "api"})
    return _task_files_out(revision)


def export_zip(revision: RubricRevision, *, by: Actor, private: bool = False) -> bytes:
    """A zip of tasks/<task-id>/rubric.json and its calib diffs (unzips into a checkout; imports back);
    ``private`` adds the task's own files (see _task_files_out)."""
    by.require(Role.MAINTAINER, revision.task.repository)
    _require_admitted(revision)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for rel, data in _task_files_out(revision, private).items():
            # A fixed timestamp: the same revision always gives the same bytes.
            info = zipfile.ZipInfo(f"tasks/{revision.task.task_id}/{rel}", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            archive.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
    what = "private zip" if private else "zip"
    record_export(revision, by.user, f"download of the {what}", **{"as": what})
    return buffer.getvalue()


@dataclass
class CheckoutExport:
    root: Path
    paths: list[str]  # relative to root, e.g. tasks/fix_x/rubric.json
    branch: str | None = None
    commit: str | None = None


def _atomic_write(target: Path, data: bytes) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"{target.parent}: cannot create: {exc.strerror or exc}") from None
    try:
        write_atomic(target, data)
    except InputError as exc:
        raise ExportError(str(exc)) from None


def _git_env(by: Any) -> dict[str, str]:
    name = (
        getattr(by, "get_full_name", lambda: "")() or getattr(by, "username", "") or "Rubrics app"
    ).strip()
    email = getattr(by, "email", "") or "rubrics@localhost"
    # The maintainer's own git config (hooks, signing, aliases) plays no part in an export: grading's Git
    # switches it off; these only name the commit's author.
    return {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }


EXPORT_GIT_TIMEOUT = 120.0  # seconds for one git call of an export


def _export_root(repository: Repository, private: bool) -> Path:
    raw = repository.private_path if private else repository.checkout_path
    what = "private path" if private else "checkout path"
    if not raw:
        raise ExportError(f"repository {repository.name} has no {what}")
    root = Path(raw)
    if not root.is_dir():
        raise ExportError(f"{what} {raw} is not a directory")
    return root.resolve()


def write_many_to_checkout(
    revisions: list[RubricRevision],
    private: bool = False,
    branch: str | None = None,
    *,
    by: Actor,
    root: Path | None = None,
) -> CheckoutExport:
    """Write tasks/<task-id>/rubric.json and calib diffs of admitted revisions (one repository), each file
    atomically; with ``branch``, commit exactly those files on a new branch of the checkout instead, leaving
    its work tree, index and HEAD as they were."""
    if not revisions:
        raise ExportError("nothing to export")
    repository = revisions[0].task.repository
    if any(r.task.repository_id != repository.pk for r in revisions):
        raise ExportError("revisions of several repositories")
    by.require(Role.MAINTAINER, repository)
    for revision in revisions:
        _require_admitted(revision)
    target_root = root.resolve() if root is not None else _export_root(repository, private)
    writes: list[tuple[str, bytes]] = []
    for revision in revisions:
        for rel, data in _task_files_out(revision, private).items():
            writes.append((posixpath.join("tasks", revision.task.task_id, rel), data))
    paths = [p for p, _ in writes]
    commit = None
    if branch is None:
        for path, _ in writes:  # checked before any file is written
            if not (target_root / path).parent.resolve().is_relative_to(target_root):
                raise ExportError(f"{path} leaves {target_root} (symbolic link?)")
        for path, data in writes:
            final = target_root / path
            if final.is_symlink():
                raise ExportError(f"{path} is a symbolic link; not overwriting it")
            _atomic_write(final, data)
    else:
        # The maintainer's checkout is left alone: no file, no index entry and no HEAD of theirs moves. The
        # commit is built from git's objects only, and the new branch waits for them to look at it.
        tasks = ", ".join(r.task.task_id for r in revisions)
        git = Git(
            target_root,
            _git_env(by.user),
            (*NO_COMMANDS_CONFIG, ("commit.gpgsign", "false")),
            timeout=EXPORT_GIT_TIMEOUT,
        )
        try:
            commit = commit_on_new_branch(
                git, branch, writes, f"Rubrics: export admitted revisions of {tasks}\n"
            )
        except GitError as exc:
            raise ExportError(exc.message) from exc
    where = f"{'private path' if private else 'checkout'} {target_root}"
    target = f"branch {branch} of the {where}" if branch else f"written into the {where}"
    for revision in revisions:
        record_export(
            revision,
            by.user,
            target,
            **{
                "as": "private" if private else "checkout",
                "root": str(target_root),
                "paths": [p for p in paths if p.startswith(f"tasks/{revision.task.task_id}/")],
                "branch": branch,
                "commit": commit,
            },
        )
    return CheckoutExport(target_root, paths, branch, commit)


def write_to_checkout(
    revision: RubricRevision, private: bool = False, branch: str | None = None, *, by: Actor
) -> CheckoutExport:
    """tasks/<task-id>/rubric.json and its calib diffs into the checkout (or the private path), atomically."""
    return write_many_to_checkout([revision], private, branch, by=by)


# --- the export job -----------------------------------------------------------------------------------------


@transaction.atomic
def start_export(
    revision: RubricRevision,
    by: Actor,
    *,
    private: bool = False,
    branch: str | None = None,
    pull_request: bool = False,
    overriding: list[str] | None = None,
) -> Job:
    """The export job. ``pull_request``: the branch is pushed to the repository's remote and, on GitHub, a
    pull request opened (services.rubrics.pull_requests); ``overriding`` names the disputed blockers the
    maintainer confirmed (a blocker disputed and not named stops the job before anything is written)."""
    by.require(Role.MAINTAINER, revision.task.repository)
    if revision.status != RevisionStatus.ADMITTED:
        raise TransitionError("only an admitted revision is exported")
    params: dict[str, Any] = {"private": private, "branch": branch}
    if pull_request:
        if private:
            raise TransitionError("the held-out set's rubrics are never pushed: no pull request of them")
        pull_requests.check_can_send(revision, branch)
        params.update(pull_request=True, overriding=sorted(set(overriding or [])))
    job = Job.objects.create(
        kind=JobKind.EXPORT_REVISION,
        repository=revision.task.repository,
        revision=revision,
        created_by=by.recorded_user,
        params=params,
    )
    send(export_revision_to_checkout, job.pk)
    return job


def _export(job: Job) -> ExportResult:
    revision = job.revision
    if revision is None:
        raise ExportError("the revision of this job is gone")
    if job.params.get("pull_request"):
        # Settled first (remote, token, disputes): a refusal writes nothing.
        try:
            plan = pull_requests.plan_pull_request(job, revision)
        except pull_requests.PullRequestError as exc:
            raise pull_requests.PullRequestError(f"Nothing was written: {exc}") from None
        by = Actor.command_line(job.created_by)
        exported = write_to_checkout(revision, branch=plan.branch, by=by)
        return pull_requests.push_and_open(plan, revision, exported.root, exported.paths, exported.commit, by)
    private = bool(job.params.get("private", False))
    branch = job.params.get("branch") or None
    exported = write_to_checkout(
        revision, private=private, branch=branch, by=Actor.command_line(job.created_by)
    )
    return ExportResult(
        root=str(exported.root), paths=exported.paths, branch=exported.branch, commit=exported.commit
    )


@job_task(JobKind.EXPORT_REVISION)
def export_revision_to_checkout(job_id: int) -> None:
    """Write an admitted revision into its repository's checkout (or private path), optionally on a branch;
    or send it as a pull request (services.rubrics.pull_requests)."""
    run(job_id, _export)

"""What every report download says about itself (§7 "provenance"): the filters, when it was made (UTC), the
package version and git commit of the code, the report's format number, the bootstrap's replicates and
seed, each task's rubric revision and sha256, and the judges; and the download's file name, which carries
the repository and the filters (``shapes-report-arm-guidance.json``).

The commit: ``RUBRICS_GIT_COMMIT`` when the environment sets it (a build that ships no ``.git`` sets it),
else read once per process from the ``.git`` of the checkout the package runs from, never by running
git: HEAD, then the ref it names (its loose file, else ``packed-refs``), following a worktree's
``gitdir:`` and ``commondir`` files, each read bounded in size; None when it cannot be read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cache
from importlib import metadata
from pathlib import Path

from pydantic import BaseModel

from grading.report.models import Report

PACKAGE = "mergeability-grading"
_MAX_SMALL = 4096  # HEAD, a loose ref, a gitdir or commondir file
_MAX_PACKED = 4 << 20  # packed-refs
_SHA = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
_SAFE = re.compile(r"[^A-Za-z0-9._]+")


class TaskRubric(BaseModel):
    task: str
    revision: int | None  # the revision's number in the app; None from run folders
    rubric_sha256: str | None


class ProvenanceJudge(BaseModel):
    role: str
    judge: str


class Provenance(BaseModel):
    repository: str | None
    filters: dict[str, str]
    generated_at: str  # UTC, ISO 8601 with a Z
    package: str = PACKAGE
    version: str | None
    commit: str | None
    report_format: int
    bootstrap: int
    seed: int
    rubrics: list[TaskRubric]
    judges: list[ProvenanceJudge]


def _read(path: Path, limit: int = _MAX_SMALL) -> str | None:
    try:
        with path.open("rb") as f:
            data = f.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit:
        return None
    return data.decode("utf-8", "replace")


def _git_dir(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return dot
        if dot.is_file():
            text = _read(dot)
            if text and text.startswith("gitdir:"):
                target = Path(text.removeprefix("gitdir:").strip())
                return target if target.is_absolute() else (folder / target)
            return None
    return None


def read_git_commit(start: Path) -> str | None:
    """The commit checked out in the git work tree holding ``start``, read from its files (see the module's
    docstring); None when there is none or it cannot be read."""
    git_dir = _git_dir(start)
    if git_dir is None:
        return None
    head = _read(git_dir / "HEAD")
    if head is None:
        return None
    head = head.strip()
    if _SHA.match(head):
        return head
    if not head.startswith("ref: "):
        return None
    ref = head.removeprefix("ref: ").strip()
    if not ref.startswith("refs/") or ".." in ref.split("/"):
        return None
    common = git_dir
    if (pointer := _read(git_dir / "commondir")) is not None:
        common = (git_dir / pointer.strip()).resolve()
    for folder in (git_dir, common):
        loose = _read(folder / ref)
        if loose is not None and _SHA.match(loose.strip()):
            return loose.strip()
    packed = _read(common / "packed-refs", _MAX_PACKED) or ""
    for line in packed.splitlines():
        sha, _, name = line.partition(" ")
        if name == ref and _SHA.match(sha):
            return sha
    return None


@cache
def code_version() -> tuple[str | None, str | None]:
    """The package's version and the code's git commit (read once per process: at its start, in effect)."""
    try:
        version: str | None = metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        version = None
    commit = os.environ.get("RUBRICS_GIT_COMMIT", "").strip().lower() or None
    if commit is not None and not _SHA.match(commit):
        commit = None
    if commit is None:
        commit = read_git_commit(Path(__file__).resolve().parent)
    return version, commit


def report_provenance(
    report: Report,
    *,
    repository: str | None,
    filters: Mapping[str, str],
    rubrics: list[TaskRubric],
    now: datetime | None = None,
) -> Provenance:
    """The provenance of a download of ``report``: ``rubrics``, each task's rubric revision and sha."""
    version, commit = code_version()
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return Provenance(
        repository=repository,
        filters=dict(filters),
        generated_at=moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        version=version,
        commit=commit,
        report_format=report.format,
        bootstrap=report.bootstrap,
        seed=report.seed,
        rubrics=sorted(rubrics, key=lambda r: (r.task, r.revision or 0, r.rubric_sha256 or "")),
        judges=[ProvenanceJudge(role=j.role, judge=j.judge) for j in report.judges],
    )


def download_name(repository: str, kind: str, filters: Mapping[str, str], ext: str) -> str:
    """``<repository>-<kind>[-<filter>-<value>...].<ext>``: every character of a value outside
    ``[A-Za-z0-9._]`` becomes ``_``, a filter's name its dashed form (``prompt-style``)."""
    parts = [repository, kind]
    for name, value in filters.items():
        parts += [name.replace("_", "-"), _SAFE.sub("_", value)[:80]]
    return "-".join(parts) + f".{ext}"

"""The merged PR a rubric is drafted from: description, diff, review threads (spec §6).

Two sources give the same :class:`PullRequest`:

- :class:`GitHubSource`: GitHub's REST API (the pull, its files, review comments, reviews, issue comments),
  every list followed through its ``Link: rel="next"`` pages, and rate limits honoured: a 403/429 with
  ``x-ratelimit-remaining: 0`` waits until ``x-ratelimit-reset``, one with ``retry-after`` waits that long,
  both only up to ``max_wait`` seconds in all, after which the fetch fails with the time to try again.
- :func:`load_pr_export`: a JSON file of the same shape, for repositories hosted elsewhere:
  ``{"pull": {...}, "files": [...], "review_comments": [...], "reviews": [...], "issue_comments": [...]}``
  with the fields GitHub gives (``pull.title/body/number/base.sha``, ``files[].filename/status/patch``,
  ``review_comments[].path/line/body/user.login``, ``reviews[].state/body/user.login``,
  ``issue_comments[].body/user.login``), and optionally ``"diff"``: the PR's unified diff.

Everything here is untrusted text (anyone can comment on a PR): the drafter fences it as data.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import httpx2
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from grading.errors import InputError
from grading.schema import read_json

GITHUB_API = "https://api.github.com"


def _text(value: Any) -> Any:
    return "" if value is None else value


# GitHub sends null for an empty body; read it as "".
Text = Annotated[str, BeforeValidator(_text)]


class _Loose(BaseModel):
    # GitHub objects carry many more keys than these.
    model_config = ConfigDict(extra="ignore", frozen=True)


class User(_Loose):
    login: str = ""


class PrFile(_Loose):
    filename: str
    status: str = ""
    previous_filename: str | None = None
    patch: str | None = None


class ReviewComment(_Loose):
    path: str = ""
    line: int | None = None
    original_line: int | None = None
    body: Text = ""
    diff_hunk: Text = ""
    user: User | None = None


class Review(_Loose):
    state: str = ""
    body: Text = ""
    user: User | None = None


class IssueComment(_Loose):
    body: Text = ""
    user: User | None = None


class PullRequest(BaseModel):
    """Everything the drafter reads about one merged PR."""

    model_config = ConfigDict(frozen=True)

    number: int
    title: str
    body: str = ""
    base_sha: str | None = None
    diff: str
    files: list[PrFile] = []
    review_comments: list[ReviewComment] = []
    reviews: list[Review] = []
    issue_comments: list[IssueComment] = []

    def touched_paths(self) -> list[str]:
        """Old and new paths of every file the PR changes, once each, in order."""
        seen: dict[str, None] = {}
        for f in self.files:
            if f.previous_filename:
                seen.setdefault(f.previous_filename)
            seen.setdefault(f.filename)
        return list(seen)


def diff_from_files(files: list[PrFile]) -> str:
    """A unified diff from the files' ``patch`` fields (GitHub omits it for binary or huge files)."""
    out: list[str] = []
    for f in files:
        old = f.previous_filename or f.filename
        out.append(f"diff --git a/{old} b/{f.filename}")
        if f.patch is None:
            out.append("(no textual patch: binary or too large)")
            continue
        out.append("--- /dev/null" if f.status == "added" else f"--- a/{old}")
        out.append("+++ /dev/null" if f.status == "removed" else f"+++ b/{f.filename}")
        out.append(f.patch.rstrip("\n"))
    return "\n".join(out) + ("\n" if out else "")


def pull_request_from_parts(
    pull: Any,
    files: Any,
    review_comments: Any,
    reviews: Any,
    issue_comments: Any,
    diff: Any = None,
    *,
    source: str | Path = "PR",
) -> PullRequest:
    """Validate GitHub-shaped parts into a :class:`PullRequest`; InputError names the part that is wrong."""
    if not isinstance(pull, dict):
        raise InputError(source, "must be a JSON object", "pull")
    try:
        file_list = [PrFile.model_validate(f) for f in _list(files, "files", source)]
        comments = [
            ReviewComment.model_validate(c) for c in _list(review_comments, "review_comments", source)
        ]
        review_list = [Review.model_validate(r) for r in _list(reviews, "reviews", source)]
        issue_list = [IssueComment.model_validate(c) for c in _list(issue_comments, "issue_comments", source)]
        base = pull.get("base")
        if diff is not None and not isinstance(diff, str):
            raise InputError(source, "must be a string (the unified diff)", "diff")
        return PullRequest(
            number=pull.get("number"),
            title=_text(pull.get("title")),
            body=_text(pull.get("body")),
            base_sha=base.get("sha") if isinstance(base, dict) else None,
            diff=diff if diff is not None else diff_from_files(file_list),
            files=file_list,
            review_comments=comments,
            reviews=review_list,
            issue_comments=issue_list,
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "pull"
        raise InputError(source, first["msg"], where) from None


def _list(value: Any, name: str, source: str | Path) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(source, "must be a JSON array", name)
    return value


def load_pr_export(path: Path) -> PullRequest:
    """A PR export file (module docstring); InputError naming the file and field on any problem."""
    return parse_pr_export(read_json(path), path)


def parse_pr_export(data: Any, source: str | Path) -> PullRequest:
    """A PR export already read as JSON (an upload, say); InputError naming ``source`` and the field."""
    if not isinstance(data, dict):
        raise InputError(source, "a PR export is a JSON object with 'pull', 'files', 'review_comments', ...")
    unknown = sorted(set(data) - {"pull", "files", "review_comments", "reviews", "issue_comments", "diff"})
    if unknown:
        raise InputError(source, "unknown key", unknown[0])
    if "pull" not in data:
        raise InputError(source, "required", "pull")
    return pull_request_from_parts(
        data["pull"],
        data.get("files"),
        data.get("review_comments"),
        data.get("reviews"),
        data.get("issue_comments"),
        data.get("diff"),
        source=source,
    )


class GitHubError(Exception):
    """The GitHub API could not be read (after waiting out rate limits up to the limit)."""


_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="next"')


class GitHubSource:
    """Fetch a PR through GitHub's REST API (module docstring)."""

    def __init__(
        self,
        repository: str,
        token: str | None,
        *,
        base_url: str = GITHUB_API,
        max_wait: float = 300.0,
        timeout: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repository):
            raise InputError(None, f"not an OWNER/NAME GitHub repository: {repository!r}", "repository")
        self.repository = repository
        self.base_url = base_url.rstrip("/")
        self.max_wait = max_wait
        self.waited = 0.0
        self.requests = 0
        self._sleep = sleep
        self._clock = clock
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "mergeability-grading",
        }
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._token = token
        self._client = httpx2.Client(headers=headers, timeout=timeout)

    def close(self) -> None:
        self._client.close()

    def fetch(self, number: int) -> PullRequest:
        base = f"{self.base_url}/repos/{self.repository}"
        try:
            pull = self._get(f"{base}/pulls/{number}")
            files = self._pages(f"{base}/pulls/{number}/files")
            comments = self._pages(f"{base}/pulls/{number}/comments")
            reviews = self._pages(f"{base}/pulls/{number}/reviews")
            issue_comments = self._pages(f"{base}/issues/{number}/comments")
        finally:
            self.close()
        return pull_request_from_parts(
            pull, files, comments, reviews, issue_comments, source=f"GitHub {self.repository}#{number}"
        )

    def _pages(self, url: str) -> list[Any]:
        out: list[Any] = []
        next_url: str | None = f"{url}?per_page=100"
        while next_url:
            response = self._request(next_url)
            page = response.json()
            if not isinstance(page, list):
                raise GitHubError(f"GitHub: {url} did not return a list")
            out.extend(page)
            match = _NEXT.search(response.headers.get("link", ""))
            next_url = match.group(1) if match else None
        return out

    def _get(self, url: str) -> Any:
        return self._request(url).json()

    def _request(self, url: str) -> httpx2.Response:
        while True:
            self.requests += 1
            try:
                response = self._client.get(url)
            except httpx2.HTTPError as exc:
                raise GitHubError(f"GitHub: {type(exc).__name__} for {url}") from exc
            wait = self._rate_limit_wait(response)
            if wait is None:
                break
            if self.waited + wait > self.max_wait:
                raise GitHubError(
                    f"GitHub: rate limited; the limit resets in {wait:.0f}s, more than the "
                    f"{self.max_wait:.0f}s this fetch may wait: try again later"
                )
            self.waited += wait
            self._sleep(wait)
        if response.status_code == 404:
            raise GitHubError(f"GitHub: not found: {url} (wrong repository or PR number, or no access)")
        if response.status_code >= 400:
            raise GitHubError(f"GitHub: HTTP {response.status_code} for {url}")
        return response

    def _rate_limit_wait(self, response: httpx2.Response) -> float | None:
        if response.status_code not in (403, 429):
            return None
        retry_after = response.headers.get("retry-after")
        if retry_after is not None and retry_after.strip().isdigit():
            return float(retry_after.strip())
        if response.headers.get("x-ratelimit-remaining") == "0":
            reset = response.headers.get("x-ratelimit-reset", "")
            if reset.isdigit():
                return max(0.0, float(reset) - self._clock()) + 1.0
            return 60.0
        return None

"""The merged PR a rubric is drafted from: description, diff, review threads (spec §6).

Two sources give the same :class:`PullRequest`:

- :class:`GitHubSource`: GitHub's REST API (the pull, its files, review comments, reviews, issue comments),
  every list followed through its ``Link: rel="next"`` pages, and rate limits honoured: a 403/429 with
  ``x-ratelimit-remaining: 0`` waits until ``x-ratelimit-reset``, one with ``retry-after`` waits that long,
  both only up to ``max_wait`` seconds in all, after which the fetch fails with the time to try again.
  A rate-limit header that is not a usable number of seconds (``retry-after: ²``, a reset thousands of
  years away) is read as absent: the wait is GitHub's documented minute, bounded the same way, and the
  fetch's notes say which header it could not read.
  Redirects (301, 302, 307, 308: a renamed or transferred repository) are followed a bounded number of
  times, and only within the configured API origin; the token is only ever sent to that origin, and a
  ``Link`` or redirect to another origin is refused. The fetch is bounded in pages per list, bytes and wall
  time; past a bound it fails naming the bound (a rubric drafted from part of a review thread would look
  complete and be wrong). A pull that answers with another number than the one asked for is an error.
- :func:`load_pr_export`: a JSON file of the same shape, for repositories hosted elsewhere:
  ``{"pull": {...}, "files": [...], "review_comments": [...], "reviews": [...], "issue_comments": [...]}``
  with the fields GitHub gives (``pull.title/body/number/base.sha``, ``files[].filename/status/patch``,
  ``review_comments[].id/in_reply_to_id/path/line/start_line/side/start_side/diff_hunk/body/user.login``,
  ``reviews[].state/body/user.login``, ``issue_comments[].body/user.login``), and optionally ``"diff"``:
  the PR's unified diff.

Everything here is untrusted text (anyone can comment on a PR): the drafter fences it as data.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import quote, urljoin, urlsplit

import httpx2
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from grading.errors import InputError
from grading.strict_json import parse_json, read_json

GITHUB_API = "https://api.github.com"
MAX_REDIRECTS = 5  # per request; GitHub sends one for a renamed or transferred repository
MAX_PAGES = 50  # per list, of 100 entries each
MAX_FETCH_BYTES = 20 * 1024 * 1024  # every response body of one fetch together
MAX_FETCH_SECONDS = 120.0  # one fetch's transfers; rate-limit waits have their own bound (max_wait)
# GitHub's rate limits reset within the hour; a reset further away is not a time this fetch can use.
RATE_LIMIT_WINDOW = 3600
# GitHub's advice when its headers say nothing usable: wait at least a minute.
UNREADABLE_RATE_LIMIT_WAIT = 60.0
MAX_HUNK_CHARS = 3_000  # the diff_hunk a review comment is shown with (its last lines: the commented ones)

# GitHub's rules: an owner (user or organisation) is letters, digits and hyphens, not starting with a
# hyphen, at most 39 characters; a repository name is letters, digits, '.', '-' and '_', at most 100, and
# never '.' or '..'.
_OWNER = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}")
_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")


def parse_github_repository(text: str) -> tuple[str, str]:
    """``OWNER/NAME`` as its two validated parts; InputError (field ``repository``) for anything else."""
    owner, sep, name = text.partition("/")
    if not sep or not _OWNER.fullmatch(owner) or not _NAME.fullmatch(name) or set(name) == {"."}:
        raise InputError(
            None,
            f"not an OWNER/NAME GitHub repository: {text!r} (OWNER: letters, digits and '-'; "
            "NAME: letters, digits, '.', '-' and '_', not '.' or '..')",
            "repository",
        )
    return owner, name


Origin = tuple[str, str, int]


def _origin(url: str) -> Origin:
    """(scheme, host, port) of an absolute http(s) URL; ValueError when it is not one."""
    split = urlsplit(url)
    scheme = split.scheme.lower()
    if scheme not in ("http", "https") or not split.hostname:
        raise ValueError("not an http(s) URL with a host")
    port = split.port  # ValueError for a port that is not a number
    return scheme, split.hostname.lower(), port if port is not None else (443 if scheme == "https" else 80)


def api_root(base_url: str) -> tuple[str, Origin]:
    """The API root without a trailing slash, and its origin; InputError (field ``--github-api``) when it is
    not an http(s) URL."""
    try:
        origin = _origin(base_url)
        split = urlsplit(base_url)
    except ValueError as exc:
        raise InputError(None, f"not an http(s) URL: {base_url!r} ({exc})", "--github-api") from None
    if split.query or split.fragment or split.username or split.password:
        raise InputError(None, f"not an API root: {base_url!r} (no user, query or fragment)", "--github-api")
    return base_url.rstrip("/"), origin


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
    """A comment on lines of the diff. Replies carry ``in_reply_to_id``: the id of the comment they answer
    (GitHub: the thread's first comment). ``side`` is LEFT (the old file's lines) or RIGHT (the new file's);
    ``start_line``/``start_side`` open a multi-line range that ends at ``line``."""

    id: int | None = None
    in_reply_to_id: int | None = None
    path: str = ""
    line: int | None = None
    original_line: int | None = None
    start_line: int | None = None
    original_start_line: int | None = None
    side: Literal["LEFT", "RIGHT"] | None = None
    start_side: Literal["LEFT", "RIGHT"] | None = None
    body: Text = ""
    diff_hunk: Text = ""
    user: User | None = None

    def where(self) -> str:
        """``path:start-end`` on its side: ``src/x.py:10-12 (new file)``."""
        end = self.line or self.original_line
        start = self.start_line or self.original_start_line
        lines = "?" if end is None else (f"{start}-{end}" if start is not None and start != end else f"{end}")
        side = {"LEFT": " (old file)", "RIGHT": " (new file)"}.get(self.side or "", "")
        return f"{self.path}:{lines}{side}"

    def hunk(self, max_chars: int = MAX_HUNK_CHARS) -> tuple[str, bool]:
        """The diff hunk it was made on, cut to its last ``max_chars`` (whole lines), and whether it was cut.
        GitHub's hunk ends at the commented line, so the end is what matters."""
        text = self.diff_hunk.rstrip("\n")
        if len(text) <= max_chars:
            return text, False
        tail = text[-max_chars:]
        return tail.split("\n", 1)[1] if "\n" in tail else tail, True


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

    number: Annotated[int, Field(strict=True, gt=0)]
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

    def review_threads(self) -> list[list[ReviewComment]]:
        """Review comments as threads: each comment that answers none, then its replies in order. A reply
        whose comment is not in the PR (deleted, or cut) starts its own thread."""
        by_id = {c.id: c for c in self.review_comments if c.id is not None}

        def root(comment: ReviewComment) -> ReviewComment:
            seen = {comment.id}
            current = comment
            while current.in_reply_to_id in by_id and current.in_reply_to_id not in seen:
                current = by_id[current.in_reply_to_id]
                seen.add(current.id)
            # A cycle (only a hand-made export has one) has no first comment: each stands alone.
            return current if current.in_reply_to_id not in by_id else comment

        firsts: dict[int, ReviewComment] = {}  # keyed by id() of the thread's first comment
        replies: dict[int, list[ReviewComment]] = {}
        for comment in self.review_comments:
            first = root(comment)
            firsts.setdefault(id(first), first)
            if first is not comment:
                replies.setdefault(id(first), []).append(comment)
        return [[first, *replies.get(key, [])] for key, first in firsts.items()]


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
        message = first["msg"]
        if where == "number":
            where, message = (
                "pull.number",
                f"a PR number is a whole number of at least 1, not {first['input']!r}",
            )
        raise InputError(source, message, where) from None


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
    """The GitHub API could not be read (after waiting out rate limits up to the limit), or a bound of the
    fetch was reached."""


_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="next"')
_REDIRECTS = (301, 302, 307, 308)


class GitHubSource:
    """Fetch a PR through GitHub's REST API (module docstring).

    ``moved_to`` is set when the pull answers for another repository than the one asked for (GitHub
    redirects a renamed or transferred repository): the OWNER/NAME it now has."""

    def __init__(
        self,
        repository: str,
        token: str | None,
        *,
        base_url: str = GITHUB_API,
        max_wait: float = 300.0,
        timeout: float = 30.0,
        max_pages: int = MAX_PAGES,
        max_bytes: int = MAX_FETCH_BYTES,
        max_seconds: float = MAX_FETCH_SECONDS,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.owner, self.name = parse_github_repository(repository)
        self.repository = f"{self.owner}/{self.name}"
        self.base_url, self.origin = api_root(base_url)
        self.max_wait = max_wait
        self.max_pages = max_pages
        self.max_bytes = max_bytes
        self.max_seconds = max_seconds
        self.timeout = timeout
        self.waited = 0.0
        self.requests = 0
        self.bytes_read = 0
        self.moved_to: str | None = None
        self.unreadable_headers: list[str] = []  # "retry-after: '²'", once each
        self._sleep = sleep
        self._clock = clock
        self._started = time.monotonic()
        self._token = token
        self._client = httpx2.Client(
            headers={
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": "mergeability-grading",
            },
            timeout=timeout,
            follow_redirects=False,  # followed here, within the API origin only
        )

    def close(self) -> None:
        self._client.close()

    def fetch(self, number: int) -> PullRequest:
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise InputError(None, f"a PR number is a whole number of at least 1, not {number!r}", "--pr")
        # Built from the validated parts only (quoted all the same): no request leaves /repos/OWNER/NAME/.
        base = f"{self.base_url}/repos/{quote(self.owner, safe='')}/{quote(self.name, safe='')}"
        self._started = time.monotonic()
        try:
            pull = self._get(f"{base}/pulls/{number}", "the pull")
            files = self._pages(f"{base}/pulls/{number}/files", "files")
            comments = self._pages(f"{base}/pulls/{number}/comments", "review comments")
            reviews = self._pages(f"{base}/pulls/{number}/reviews", "reviews")
            issue_comments = self._pages(f"{base}/issues/{number}/comments", "conversation comments")
        finally:
            self.close()
        self.moved_to = _moved_to(pull, self.repository)
        pr = pull_request_from_parts(
            pull, files, comments, reviews, issue_comments, source=f"GitHub {self.repository}#{number}"
        )
        if pr.number != number:
            # Drafted from, it would be another PR's rubric under this one's number.
            raise GitHubError(
                f"GitHub: asked for PR #{number} of {self.repository}, and the answer is PR #{pr.number}"
            )
        return pr

    def notes(self) -> list[str]:
        """What the caller should tell the maintainer about this fetch (a moved repository, a rate-limit
        header that could not be read)."""
        notes = [
            f"GitHub's rate-limit header {header} is not a usable number of seconds: read as absent (the "
            f"wait went by GitHub's other header, or was {UNREADABLE_RATE_LIMIT_WAIT:.0f}s)"
            for header in self.unreadable_headers
        ]
        if self.moved_to is not None:
            notes.append(
                f"the repository moved to {self.moved_to} (asked for {self.repository}): name the new one"
            )
        return notes

    def _pages(self, url: str, what: str) -> list[Any]:
        out: list[Any] = []
        next_url: str | None = f"{url}?per_page=100"
        pages = 0
        while next_url:
            if pages == self.max_pages:
                raise GitHubError(
                    f"GitHub: the {what} run past {self.max_pages} pages of 100, the most one fetch reads"
                )
            pages += 1
            page, headers = self._request(next_url, what)
            if not isinstance(page, list):
                raise GitHubError(f"GitHub: {url} did not return a list")
            out.extend(page)
            match = _NEXT.search(headers.get("link", ""))
            next_url = (
                self._same_origin(urljoin(next_url, match.group(1)), f"the next page of {what}")
                if (match)
                else None
            )
        return out

    def _get(self, url: str, what: str) -> Any:
        return self._request(url, what)[0]

    def _same_origin(self, url: str, what: str) -> str:
        try:
            origin = _origin(url)
        except ValueError:
            raise GitHubError(f"GitHub: {what} is not an http(s) URL: {url[:200]!r}") from None
        if origin != self.origin:
            raise GitHubError(
                f"GitHub: {what} points to {_origin_text(origin)}, not the configured API "
                f"{_origin_text(self.origin)}: refused (the token is only sent to the configured API)"
            )
        return url

    def _headers(self, url: str) -> dict[str, str]:
        # Every URL was checked against the origin already; checked again here, where the token is added.
        if self._token and _origin(url) == self.origin:
            return {"Authorization": f"Bearer {self._token}"}
        return {}

    def _request(self, url: str, what: str) -> tuple[Any, httpx2.Headers]:
        """The JSON body and headers of a GET, redirects within the origin followed."""
        for _ in range(MAX_REDIRECTS + 1):
            status, body, headers = self._send(url)
            if status not in _REDIRECTS:
                break
            location = headers.get("location")
            if not location:
                raise GitHubError(f"GitHub: HTTP {status} without a Location for {url}")
            url = self._same_origin(urljoin(url, location), f"the redirect for {what}")
        else:
            raise GitHubError(f"GitHub: more than {MAX_REDIRECTS} redirects for {what}")
        if status == 404:
            raise GitHubError(f"GitHub: not found: {url} (wrong repository or PR number, or no access)")
        if status >= 400:
            raise GitHubError(f"GitHub: HTTP {status} for {url}")
        try:
            return parse_json(body, url), headers
        except InputError as exc:
            raise GitHubError(f"GitHub: {exc}") from None

    def _send(self, url: str) -> tuple[int, bytes, httpx2.Headers]:
        """One GET (rate limits waited out), its body read within the fetch's byte and time bounds."""
        while True:
            self.requests += 1
            try:
                with self._client.stream(
                    "GET", url, headers=self._headers(url), timeout=self._timeout_left()
                ) as response:
                    chunks: list[bytes] = []
                    for chunk in response.iter_bytes():
                        self.bytes_read += len(chunk)
                        if self.bytes_read > self.max_bytes:
                            raise GitHubError(
                                f"GitHub: the PR's responses run past {self.max_bytes} bytes, the most one "
                                "fetch reads"
                            )
                        self._timeout_left()
                        chunks.append(chunk)
            except httpx2.HTTPError as exc:
                self._timeout_left()  # a timeout cut short by the fetch's own bound says so
                raise GitHubError(f"GitHub: {type(exc).__name__} for {url}") from exc
            limit = self._rate_limit(response)
            if limit is None:
                return response.status_code, b"".join(chunks), response.headers
            self.unreadable_headers.extend(h for h in limit.unreadable if h not in self.unreadable_headers)
            if self.waited + limit.wait > self.max_wait:
                raise GitHubError(f"GitHub: rate limited; {self._rate_limit_text(limit)}")
            self.waited += limit.wait
            self._sleep(limit.wait)

    def _timeout_left(self) -> float:
        """Seconds the fetch may still take (rate-limit waits not counted); GitHubError past the bound."""
        left = self.max_seconds - (time.monotonic() - self._started - self.waited)
        if left <= 0:
            raise GitHubError(f"GitHub: the fetch took longer than {self.max_seconds:.0f}s, the most it may")
        return min(self.timeout, left)

    def _rate_limit_text(self, limit: _RateLimit) -> str:
        if limit.resets_at is not None:
            when = datetime.fromtimestamp(limit.resets_at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            resets = f"the limit resets at {when} (in {limit.wait:.0f}s)"
        elif limit.unreadable:
            resets = (
                f"GitHub's {' and '.join(limit.unreadable)} is not a usable number of seconds (read as "
                f"absent), so the wait would be {limit.wait:.0f}s more"
            )
        else:
            resets = f"GitHub asks to wait {limit.wait:.0f}s more"
        return (
            f"waited {self.waited:.0f}s in all, and this fetch waits at most {self.max_wait:.0f}s; "
            f"{resets}: try again then"
        )

    def _rate_limit(self, response: httpx2.Response) -> _RateLimit | None:
        """The wait a rate-limited answer asks for (GitHub's rules: ``retry-after`` seconds; else, with no
        requests left, until ``x-ratelimit-reset``); None when the answer is not rate limited. A header
        that is not a usable number is read as absent, and named."""
        if response.status_code not in (403, 429):
            return None
        unreadable: list[str] = []
        retry_after = response.headers.get("retry-after")
        if retry_after is not None:
            seconds = _whole_seconds(retry_after)
            if seconds is not None:
                return _RateLimit(float(seconds))
            unreadable.append(f"retry-after: {retry_after[:40]!r}")
        if response.headers.get("x-ratelimit-remaining") == "0":
            reset = response.headers.get("x-ratelimit-reset")
            resets_at = _whole_seconds(reset) if reset is not None else None
            now = self._clock()
            if resets_at is not None and resets_at - now <= RATE_LIMIT_WINDOW:
                wait = max(0.0, resets_at - now) + 1.0
                return _RateLimit(wait, resets_at=resets_at, unreadable=tuple(unreadable))
            if reset is not None:
                unreadable.append(f"x-ratelimit-reset: {reset[:40]!r}")
        elif not unreadable:
            return None  # a 403 or 429 that is not a rate limit
        return _RateLimit(UNREADABLE_RATE_LIMIT_WAIT, unreadable=tuple(unreadable))


@dataclass(frozen=True)
class _RateLimit:
    wait: float  # seconds
    resets_at: int | None = None  # the reset GitHub announced, as a Unix time, when it was a usable one
    unreadable: tuple[str, ...] = ()  # the headers read as absent: "retry-after: '²'"


_WHOLE_SECONDS = re.compile(r"[0-9]{1,10}")


def _whole_seconds(value: str) -> int | None:
    """A header's whole number of seconds (or Unix time): ASCII digits, at most 10 of them (``str.isdigit``
    accepts '²', which ``int`` refuses); None for anything else, an HTTP date included."""
    value = value.strip()
    return int(value) if _WHOLE_SECONDS.fullmatch(value) else None


def _origin_text(origin: Origin) -> str:
    scheme, host, port = origin
    return f"{scheme}://{host}:{port}"


def _moved_to(pull: Any, asked: str) -> str | None:
    """The OWNER/NAME the pull's base repository has now, when it is not the one asked for."""
    base = pull.get("base") if isinstance(pull, dict) else None
    repo = base.get("repo") if isinstance(base, dict) else None
    name = repo.get("full_name") if isinstance(repo, dict) else None
    if not isinstance(name, str) or name.lower() == asked.lower():
        return None
    try:
        owner, rest = parse_github_repository(name)
    except InputError:
        return None
    return f"{owner}/{rest}"

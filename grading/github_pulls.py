"""Opening a pull request through GitHub's REST API (``POST /repos/OWNER/NAME/pulls``).

One request, bounded: ``timeout`` seconds, a response of at most :data:`MAX_RESPONSE_BYTES`. The token is
sent only to the configured API origin; a redirect (307/308: a renamed repository) is followed a bounded
number of times within that origin and refused to any other, so the token never leaves it. Whatever GitHub
answers is untrusted: only the number and an http(s) ``html_url`` of the new pull request are kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urljoin, urlsplit

import httpx2

from grading.draft.pr import GitHubError, api_root, parse_github_repository
from grading.errors import InputError
from grading.strict_json import parse_json

MAX_RESPONSE_BYTES = 1024 * 1024
MAX_REDIRECTS = 3
MAX_BODY_CHARS = 60_000  # GitHub refuses a pull request body past 65,536 characters
_REDIRECTS = (301, 302, 303, 307, 308)


@dataclass(frozen=True)
class OpenedPullRequest:
    number: int
    url: str  # the pull request's page (html_url)


def _origin(url: str) -> tuple[str, str, int] | None:
    try:
        split = urlsplit(url)
        port = split.port
    except ValueError:
        return None
    scheme = split.scheme.lower()
    if scheme not in ("http", "https") or not split.hostname:
        return None
    return scheme, split.hostname.lower(), port if port is not None else (443 if scheme == "https" else 80)


def open_pull_request(
    repository: str,
    token: str,
    *,
    head: str,
    base: str,
    title: str,
    body: str,
    api_url: str = "https://api.github.com",
    timeout: float = 30.0,
) -> OpenedPullRequest:
    """Open a pull request of branch ``head`` into ``base`` of ``repository`` (OWNER/NAME); GitHubError
    saying what GitHub answered otherwise."""
    owner, name = parse_github_repository(repository)
    root, _ = api_root(api_url)
    origin = _origin(root)
    url = f"{root}/repos/{quote(owner, safe='')}/{quote(name, safe='')}/pulls"
    payload = {"title": title[:250], "head": head, "base": base, "body": body[:MAX_BODY_CHARS]}
    headers = {
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
        "User-Agent": "mergeability-grading",
    }
    with httpx2.Client(timeout=timeout, follow_redirects=False) as client:
        for _ in range(MAX_REDIRECTS + 1):
            sent = dict(headers)
            if token and _origin(url) == origin:  # checked where the token is added
                sent["Authorization"] = f"Bearer {token}"
            status, raw, location = _post(client, url, payload, sent)
            if status not in _REDIRECTS:
                break
            if not location:
                raise GitHubError(f"GitHub: HTTP {status} without a Location for {url}")
            target = urljoin(url, location)
            if _origin(target) != origin:
                raise GitHubError(
                    f"GitHub: the pull request request was redirected to {target[:200]!r}, outside the "
                    f"configured API {root}: refused (the token is only sent to the configured API)"
                )
            url = target
        else:
            raise GitHubError(f"GitHub: more than {MAX_REDIRECTS} redirects for {url}")
    try:
        answer = parse_json(raw, url) if raw else None
    except InputError:  # a page that is not JSON: said by its status below
        answer = None
    if status != 201:
        message = answer.get("message") if isinstance(answer, dict) else None
        errors = answer.get("errors") if isinstance(answer, dict) else None
        detail = "; ".join(
            str(e.get("message") or e.get("code") or "") for e in errors or [] if isinstance(e, dict)
        )
        said = ": ".join(str(part)[:300] for part in (message, detail) if part)
        raise GitHubError(f"GitHub: HTTP {status} opening the pull request{f' ({said})' if said else ''}")
    number = answer.get("number") if isinstance(answer, dict) else None
    html_url = answer.get("html_url") if isinstance(answer, dict) else None
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise GitHubError("GitHub: the answer to opening the pull request has no number")
    if not isinstance(html_url, str) or _origin(html_url) is None or len(html_url) > 500:
        raise GitHubError("GitHub: the answer to opening the pull request has no http(s) html_url")
    return OpenedPullRequest(number, html_url)


def _post(
    client: httpx2.Client, url: str, payload: dict[str, str], headers: dict[str, str]
) -> tuple[int, bytes, str | None]:
    try:
        with client.stream("POST", url, json=payload, headers=headers) as response:
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise GitHubError(f"GitHub: the answer is larger than {MAX_RESPONSE_BYTES} bytes")
                chunks.append(chunk)
            return response.status_code, b"".join(chunks), response.headers.get("location")
    except httpx2.HTTPError as exc:
        raise GitHubError(f"GitHub: {type(exc).__name__} for {url}") from exc

"""A local HTTP server that speaks the GitHub REST endpoints the drafter reads, with pagination and rate
limits, so the real HTTP client runs end to end in tests."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.local_server import LocalServer


class FakeGitHub(LocalServer):
    """Serves one repository's pulls; lists are cut into pages of ``page_size`` whatever ``per_page`` asks."""

    def __init__(self, repository: str = "octo/shapes") -> None:
        self.repository = repository
        self.pulls: dict[int, dict[str, Any]] = {}
        self.page_size = 2
        self.requests: list[tuple[str, dict[str, str]]] = []
        # path prefix -> number of rate-limit answers still to give before answering normally
        self.rate_limited: dict[str, int] = {}
        self.rate_limit_reset_in = 3
        self.rate_limit_reset: str | None = None  # the x-ratelimit-reset sent as is (default: in ..._in s)
        self.retry_after: str | None = None
        # path prefix -> (status, target prefix: a path on this server, or an absolute URL elsewhere)
        self.redirects: dict[str, tuple[int, str]] = {}
        self.link_base: str | None = None  # where Link: rel="next" points (default: this server)
        self.endless: set[str] = set()  # list paths whose pagination never ends
        self.delay = 0.0  # seconds each answer waits
        self.serve(self._handler())

    def add_pull(
        self,
        number: int,
        pull: dict[str, Any],
        files: list[Any],
        review_comments: list[Any],
        reviews: list[Any],
        issue_comments: list[Any],
    ) -> None:
        self.pulls[number] = {
            "pull": pull,
            "files": files,
            "comments": review_comments,
            "reviews": reviews,
            "issue_comments": issue_comments,
        }

    def _route(self, path: str) -> Any:
        prefix = f"/repos/{self.repository}/"
        if not path.startswith(prefix):
            return None
        parts = path[len(prefix) :].strip("/").split("/")
        if len(parts) < 2 or not parts[1].isdigit() or int(parts[1]) not in self.pulls:
            return None
        pull = self.pulls[int(parts[1])]
        if parts[0] == "pulls" and len(parts) == 2:
            return pull["pull"]
        if parts[0] == "pulls" and len(parts) == 3 and parts[2] in ("files", "comments", "reviews"):
            return pull[parts[2]]
        if parts[0] == "issues" and parts[2:] == ["comments"]:
            return pull["issue_comments"]
        return None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                split = urlsplit(self.path)
                server.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                if server.delay:
                    time.sleep(server.delay)
                for prefix, (status, target) in server.redirects.items():
                    if split.path.startswith(prefix):
                        moved = (
                            target + split.path[len(prefix) :] + (f"?{split.query}" if split.query else "")
                        )
                        location = moved if moved.startswith("http") else server.url + moved
                        return self._send(
                            status, {"message": "Moved Permanently", "url": location}, {"location": location}
                        )
                for prefix, left in list(server.rate_limited.items()):
                    if split.path.startswith(prefix) and left > 0:
                        server.rate_limited[prefix] = left - 1
                        headers = {
                            "x-ratelimit-remaining": "0",
                            "x-ratelimit-reset": server.rate_limit_reset
                            or str(int(time.time()) + server.rate_limit_reset_in),
                        }
                        if server.retry_after is not None:
                            headers = {"retry-after": server.retry_after}
                        return self._send(403, {"message": "API rate limit exceeded"}, headers)
                data = server._route(split.path)
                if data is None:
                    return self._send(404, {"message": "Not Found"})
                if not isinstance(data, list):
                    return self._send(200, data)
                page = int(parse_qs(split.query).get("page", ["1"])[0])
                size = server.page_size
                endless = split.path in server.endless
                chunk = data[:size] if endless else data[(page - 1) * size : page * size]
                headers = {}
                if endless or page * size < len(data):
                    base = server.link_base or server.url
                    headers["link"] = (
                        f'<{base}{split.path}?per_page=100&page={page - 1}>; rel="prev", '
                        f'<{base}{split.path}?per_page=100&page={page + 1}>; rel="next"'
                    )
                return self._send(200, chunk, headers)

            def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

        return Handler


@pytest.fixture(name="github")
def github_fixture() -> Iterator[FakeGitHub]:
    server = FakeGitHub().start()
    try:
        yield server
    finally:
        server.stop()

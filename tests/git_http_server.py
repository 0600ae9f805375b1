"""Local stand-ins for a git host: a smart-HTTP git server (git's own ``git http-backend``, run as a CGI
program) that asks for a password, and GitHub's pulls API. Both record every request with its
Authorization header, so a test sees where a token went."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.local_server import LocalServer


@dataclass
class Seen:
    method: str
    path: str
    authorization: str | None
    body: bytes = b""


class _Server(LocalServer):
    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.redirect_to: str | None = None  # every request answers 307 to this origin (+ the same path)
        self.serve(self._handler())

    def answer(self, handler: BaseHTTPRequestHandler, method: str, body: bytes) -> None:
        raise NotImplementedError

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                server.requests.append(Seen(self.command, self.path, self.headers.get("Authorization"), body))
                if server.redirect_to:
                    self.send_response(307)
                    self.send_header("Location", server.redirect_to + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                server.answer(self, self.command, body)

            do_GET = do_POST = _any

        return Handler


class GitHttpServer(_Server):
    """Serves the bare repositories under ``root`` over smart HTTP; with ``password`` set, every request
    without ``Authorization: Basic <any user>:<password>`` gets 401 (as a host that needs a token)."""

    def __init__(self, root: Path, password: str | None = None) -> None:
        super().__init__()
        self.root = root
        self.password = password

    def _authorized(self, header: str | None) -> bool:
        if self.password is None:
            return True
        if not header or not header.startswith("Basic "):
            return False
        decoded = base64.b64decode(header[len("Basic ") :]).decode()
        return decoded.partition(":")[2] == self.password

    def answer(self, handler: BaseHTTPRequestHandler, method: str, body: bytes) -> None:
        if not self._authorized(handler.headers.get("Authorization")):
            handler.send_response(401)
            handler.send_header("WWW-Authenticate", 'Basic realm="git"')
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        path, _, query = handler.path.partition("?")
        env = {
            "PATH": os.environ.get("PATH", ""),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REMOTE_USER": "tester",  # http-backend takes pushes only from an authenticated user
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": handler.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_CONTENT_ENCODING": handler.headers.get("Content-Encoding", ""),
            "GIT_PROTOCOL": handler.headers.get("Git-Protocol", ""),
        }
        done = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=False, timeout=60
        )
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        status = 200
        headers: list[tuple[str, str]] = []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        handler.send_response(status)
        for name, value in headers:
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)


@dataclass
class Pull:
    repository: str
    payload: dict[str, Any]
    authorization: str | None


class PullsStandIn(_Server):
    """GitHub's ``POST /repos/{owner}/{name}/pulls``: 201 with the pull's number and html_url, or the
    ``status`` and ``error`` set for the next answers."""

    def __init__(self, web_url: str = "https://github.example") -> None:
        super().__init__()
        self.web_url = web_url
        self.pulls: list[Pull] = []
        self.status = 201
        self.error: dict[str, Any] = {}
        self.html_url: str | None = None  # an odd html_url to answer with

    def answer(self, handler: BaseHTTPRequestHandler, method: str, body: bytes) -> None:
        parts = handler.path.strip("/").split("/")
        if method != "POST" or len(parts) != 4 or parts[0] != "repos" or parts[3] != "pulls":
            self._json(handler, 404, {"message": "Not Found"})
            return
        if self.status != 201:
            self._json(handler, self.status, self.error)
            return
        repository = f"{parts[1]}/{parts[2]}"
        self.pulls.append(Pull(repository, json.loads(body), handler.headers.get("Authorization")))
        number = len(self.pulls)
        url = self.html_url or f"{self.web_url}/{repository}/pull/{number}"
        self._json(handler, 201, {"number": number, "html_url": url, "state": "open"})

    @staticmethod
    def _json(handler: BaseHTTPRequestHandler, status: int, answer: Any) -> None:
        raw = json.dumps(answer).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(raw)))
        handler.end_headers()
        handler.wfile.write(raw)


def bare_repository(path: Path) -> Path:
    """An empty bare repository at ``path`` (pushes to it need no hook and no config)."""
    path.mkdir(parents=True)
    subprocess.run(
        ["git", "init", "-q", "--bare", "-b", "main", str(path)],
        check=True,
        capture_output=True,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull},
    )
    return path


@contextmanager
def serving_shapes(root: Path, token: str) -> Iterator[GitHttpServer]:
    """A git server of ``root`` holding one empty bare repository, ``octo/shapes.git``, that takes pushes
    with ``token``; stopped on the way out."""
    bare_repository(root / "octo" / "shapes.git")
    server = GitHttpServer(root, password=token).start()
    yield server
    server.stop()

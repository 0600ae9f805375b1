"""The base of the tests' local HTTP stand-ins (git over HTTP, GitHub's API, the model providers): a
threading server on a free port of 127.0.0.1, its URL, start and stop; and a free port for a server of
another process."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now, for a server a test starts in another process."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalServer:
    """A subclass calls ``serve`` with its request handler in ``__init__``; ``start`` runs it in a thread."""

    _httpd: ThreadingHTTPServer
    _thread: threading.Thread

    def serve(
        self, handler: type[BaseHTTPRequestHandler], *, name: str | None = None, block_on_close: bool = True
    ) -> None:
        """Listen with ``handler`` (``block_on_close``: ``stop`` waits for the answers being sent)."""
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = block_on_close
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name=name, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

"""A redis-server of one test's own, on a free port, that the test stops and starts: a broker that goes away
(its port closed: a real "unreachable") and comes back at the same URL.

Pytest fixture: ``own_redis`` (import ``own_redis_fixture`` from this module into a test module); it skips
when redis-server is not installed."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.local_server import free_port

REDIS_SERVER = shutil.which("redis-server")


class OwnRedis:
    """A redis-server of this test only, without persistence: restarting it loses every message in it."""

    def __init__(self, port: int, folder: Path) -> None:
        self.port = port
        self.folder = folder
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [str(REDIS_SERVER), "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        command += ["--appendonly", "no", "--dir", str(self.folder)]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


@pytest.fixture(name="own_redis")
def own_redis_fixture(tmp_path: Path) -> Iterator[OwnRedis]:
    """A started OwnRedis, stopped at the end."""
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed: this test starts one of its own")
    redis = OwnRedis(free_port(), tmp_path)
    redis.start()
    try:
        yield redis
    finally:
        redis.stop()

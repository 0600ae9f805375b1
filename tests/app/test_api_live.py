"""The HTTP API against a live server with the real client (`rubric push` and `rubric pull`, urllib), and the
harness of the done-when: 1,000 runs pushed in batches, a sweep started, polled to its end on a real Celery
worker, and the report's JSON pulled."""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from grading.cli import main as rubric
from grading.cli.api import Client
from rubrics_app.models import AgentRun, Repository, RubricRevision, RunGrade
from tests.app.api_helpers import run_record, token_for
from tests.app.worker_helpers import module_worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]

HARNESS_RUNS = 1000
POLL_DEADLINE_SECONDS = 600


@pytest.fixture(scope="module")
def worker(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    with module_worker(django_db_blocker, tmp_path_factory, "api-worker", name="api") as log:
        yield log


def write_runs(root: Path, count: int) -> None:
    for n in range(count):
        record = run_record(n)
        run_dir = root / record["name"]
        run_dir.mkdir(parents=True)
        for name, text in record["files"].items():
            (run_dir / name).write_text(text)


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = rubric(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_push_then_pull_with_the_rubric_command(
    live_server: Any, maintainer: User, repository: Repository, admitted_revision: RubricRevision,
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("RUBRICS_API_TOKEN", token_for(maintainer, repository))
    write_runs(tmp_path / "runs", 5)
    api = ["--api", live_server.url, "--repository", repository.name]
    code, out, err = run_cli("push", str(tmp_path / "runs"), *api, "--batch", "2")
    assert code == 0, err
    assert out.startswith("5 runs stored, 0 already there")
    sources = set(AgentRun.objects.filter(task__repository=repository).values_list("source", flat=True))
    assert sources == {f"runs/guidance-model-a-{n}" for n in range(5)}  # no local path above the folder
    code, out, err = run_cli("push", str(tmp_path / "runs"), *api)
    assert code == 0 and out.startswith("0 runs stored, 5 already there"), err

    code, out, err = run_cli("pull", *api, "--out", str(tmp_path / "out"))
    assert code == 0, err
    pulled = tmp_path / "out" / "tasks" / "fix_fraction_gt1" / "rubric.json"
    assert pulled.read_bytes() == admitted_revision.rubric_json_bytes()


def test_a_push_with_a_problem_names_it_and_exits_2(
    live_server: Any, maintainer: User, repository: Repository, admitted_revision: RubricRevision,
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("RUBRICS_API_TOKEN", token_for(maintainer, repository))
    write_runs(tmp_path / "runs", 2)
    (tmp_path / "runs" / "guidance-model-a-1" / "grade.json").unlink()
    code, _, err = run_cli("push", str(tmp_path / "runs"), "--api", live_server.url, "--repository",
                           repository.name)  # fmt: skip
    assert code == 2
    assert "runs[1].files.grade.json" in err
    assert not AgentRun.objects.exists()


class _Recorder(BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []
    redirect_to = ""

    def do_GET(self) -> None:
        type(self).seen.append(dict(self.headers))
        if self.redirect_to:
            self.send_response(302)
            self.send_header("Location", self.redirect_to + self.path)
        else:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
        self.end_headers()
        if not self.redirect_to:
            self.wfile.write(b"[]")

    def log_message(self, *args: Any) -> None:
        pass


def _serve(handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_the_token_is_never_sent_to_another_origin_on_a_redirect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere_handler: type[_Recorder] = type("Elsewhere", (_Recorder,), {"seen": [], "redirect_to": ""})
    elsewhere = _serve(elsewhere_handler)
    redirecting_handler: type[_Recorder] = type(
        "Redirecting", (_Recorder,), {"seen": [], "redirect_to": f"http://127.0.0.1:{elsewhere.server_port}"}
    )
    redirecting = _serve(redirecting_handler)
    try:
        monkeypatch.setenv("RUBRICS_API_TOKEN", "rbk_secret_token")
        code, _, err = run_cli("pull", "--api", f"http://127.0.0.1:{redirecting.server_port}",
                               "--repository", "x", "--out", str(tmp_path))  # fmt: skip
    finally:
        for server in (redirecting, elsewhere):
            server.shutdown()
            server.server_close()
    assert code == 1 and "another origin" in err
    assert redirecting_handler.seen[0]["Authorization"] == "Bearer rbk_secret_token"
    assert elsewhere_handler.seen == []


def test_a_harness_pushes_1000_runs_sweeps_them_and_pulls_the_report(
    live_server: Any, worker: Path, maintainer: User, repository: Repository,
    admitted_revision: RubricRevision,
) -> None:  # fmt: skip
    client = Client(live_server.url, token_for(maintainer, repository))
    base = f"/repositories/{repository.name}"
    started = time.monotonic()
    for first in range(0, HARNESS_RUNS, 100):
        answer = client.call(
            "POST", f"{base}/runs", {"runs": [run_record(n) for n in range(first, first + 100)]}
        )
        assert len(answer["created"]) == 100
    pushed = time.monotonic()
    sweep = client.call("POST", f"{base}/sweeps", {})
    assert sweep["total_runs"] == HARNESS_RUNS
    deadline = time.monotonic() + POLL_DEADLINE_SECONDS
    while sweep["job"]["status"] not in ("done", "failed"):
        assert time.monotonic() < deadline, f"sweep still {sweep}; worker log:\n{worker.read_text()}"
        time.sleep(0.5)
        sweep = client.call("GET", f"{base}/sweeps/{sweep['id']}")
    swept = time.monotonic()
    assert sweep["job"]["status"] == "done", sweep
    assert sweep["done_runs"] == HARNESS_RUNS and sweep["judge_failures"] == 0
    assert RunGrade.objects.filter(run__task__repository=repository, is_current=True).count() == HARNESS_RUNS
    report = client.call("GET", f"{base}/report")
    cells = report["cells"]
    assert sum(cell["runs"] for cell in cells) == HARNESS_RUNS, json.dumps(report)[:2000]
    print(f"push {pushed - started:.1f} s, sweep {swept - pushed:.1f} s")

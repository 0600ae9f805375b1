"""Shared pieces of the benchmark scripts: timing commands, building a large change, printing tables.

Every figure is a ratio against a reference measured in the same run on the same machine, so a loaded or
slow machine moves both sides. Each side is timed several times and the fastest run is kept: the others
measure the machine's load, not the code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
RUBRIC = [sys.executable, "-m", "grading"]

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def env() -> dict[str, str]:
    return {**os.environ, **GIT_ENV, "PYTHONPATH": str(REPO_ROOT)}


def run(cmd: Sequence[str | Path], cwd: Path | None = None, ok: tuple[int, ...] = (0,)) -> bytes:
    result = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env(), capture_output=True, check=False)
    if result.returncode not in ok:
        raise SystemExit(f"{' '.join(map(str, cmd))}: exit {result.returncode}\n{result.stderr.decode()}")
    return result.stdout


def best_of(repeat: int, action: Callable[[], object]) -> float:
    """The fastest of ``repeat`` wall-clock timings of ``action``, in seconds."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return min(times)


def time_command(
    cmd: Sequence[str | Path], repeat: int, cwd: Path | None = None, ok: tuple[int, ...] = (0,)
) -> float:
    return best_of(repeat, lambda: run(cmd, cwd=cwd, ok=ok))


def time_commands(
    commands: dict[str, Sequence[str | Path]], repeat: int, cwd: Path | None = None
) -> dict[str, float]:
    """The fastest of ``repeat`` runs of each command, taken in turns (one run of each per round), so that
    a load that comes and goes on the machine falls on every command alike."""
    best = dict.fromkeys(commands, float("inf"))
    for _ in range(repeat):
        for name, cmd in commands.items():
            best[name] = min(best[name], best_of(1, lambda cmd=cmd: run(cmd, cwd=cwd)))
    return best


def peak_rss_mb(cmd: Sequence[str | Path], cwd: Path | None = None, ok: tuple[int, ...] = (0,)) -> float:
    """Peak resident memory of one run of ``cmd`` (a child process), in MB."""
    code = (
        "import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:], capture_output=True)\n"
        "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    out = run([sys.executable, "-c", code, *cmd], cwd=cwd).decode().split()
    if int(out[0]) not in ok:
        raise SystemExit(f"{' '.join(map(str, cmd))}: exit {out[0]}")
    kilobytes = int(out[1])  # Linux reports ru_maxrss in KiB
    return kilobytes * 1024 / 1e6


def git(repo: Path, *args: str) -> bytes:
    return run(["git", *args], cwd=repo)


@dataclass
class Row:
    measure: str
    seconds: float
    reference: str
    reference_seconds: float
    goal: float | None  # the ratio to stay under; None when only reported

    @property
    def ratio(self) -> float:
        return self.seconds / self.reference_seconds

    def met(self) -> str:
        if self.goal is None:
            return ""
        return "yes" if self.ratio <= self.goal else "NO"


def print_table(title: str, rows: list[Row], notes: Sequence[str] = ()) -> None:
    print(f"\n### {title}\n")
    print("| measure | time (s) | reference | reference (s) | ratio | goal | met |")
    print("|---|---:|---|---:|---:|---:|---|")
    for r in rows:
        goal = f"<= {r.goal:g}x" if r.goal is not None else "-"
        print(
            f"| {r.measure} | {r.seconds:.3f} | {r.reference} | {r.reference_seconds:.3f} | "
            f"{r.ratio:.2f}x | {goal} | {r.met()} |"
        )
    for note in notes:
        print(f"\n{note}")
    sys.stdout.flush()


def machine() -> str:
    git_version = run(["git", "--version"]).decode().strip()
    return f"{os.cpu_count()} cores, Python {sys.version.split()[0]}, {git_version}"


def write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data))


def bench_rubric(
    allowed: list[str], max_files: int | None = None, max_lines: int | None = None
) -> dict[str, object]:
    """A valid repo_rubric.v1 whose scope is all that matters to the benchmarks."""
    scope: dict[str, object] = {"allowed_globs": allowed, "denied_globs": [".ci/**", ".github/**"]}
    if max_files is not None:
        scope["max_files"] = max_files
    if max_lines is not None:
        scope["max_changed_lines"] = max_lines
    return {
        "schema": "repo_rubric.v1",
        "task": "bench",
        "intent": "a change to measure",
        "scope": scope,
        "blockers": [{"id": f"B{i}", "criterion": f"blocker {i}", "evidence": "src/a.py:1"} for i in (1, 2)],
        "non_blockers": [{"id": f"N{i}", "criterion": f"non-blocker {i}"} for i in (1, 2, 3)],
        "hack_report": {"lazy_solution": "a lazy change", "alt_valid_solution": "another change"},
    }


def django_for_pages(database_url: str | None, prefix: str) -> str:
    """Set up Django for a benchmark that renders the app's pages: a temp VAR_DIR (returned), the given
    database (None: a SQLite file in that folder), the filesystem broker, and Django's plain static storage
    as in the tests (production's hashed names need a collectstatic manifest, which a benchmark has no
    reason to write) with an empty static root (WhiteNoise warns without one)."""
    import tempfile

    tmp = tempfile.mkdtemp(prefix=prefix)
    os.environ["DATABASE_URL"] = database_url or f"sqlite:///{tmp}/bench.sqlite3"
    os.environ["RUBRICS_VAR_DIR"] = tmp
    os.environ["CELERY_BROKER_URL"] = "filesystem://"
    os.environ["DJANGO_SETTINGS_MODULE"] = "rubrics_app.settings"
    import django
    from django.conf import settings
    from django.test.utils import override_settings

    django.setup()
    plain = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}
    override_settings(STORAGES={**settings.STORAGES, "staticfiles": plain}).enable()
    os.makedirs(settings.STATIC_ROOT, exist_ok=True)
    return tmp


@dataclass
class Goal:
    """One figure a goal names, for ``run_all.py``: ``value`` (a ratio, or seconds) met when at most
    ``limit``. ``goal`` names the goal it answers (e.g. "issue 34 §4: sweep"), ``figure`` what was
    measured, ``note`` the conditions (the reference, the load average)."""

    goal: str
    figure: str
    value: float
    limit: float
    unit: str = "x"  # "x" for a ratio, "s" for seconds
    note: str = ""

    @property
    def met(self) -> bool:
        return self.value <= self.limit


class Skip(Exception):
    """Raised by a benchmark's ``goals()`` that cannot measure here (a database it needs is not given)."""


def load() -> str:
    """The load average now, for the note under a figure: a loaded machine moves even a ratio."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"

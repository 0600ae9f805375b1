"""``rubric push RUN_DIR... --api URL --repository NAME`` and ``rubric pull --api URL --repository NAME
--out DIR``: agent runs sent to the app's HTTP API in batches, and the admitted rubrics fetched from it into
``DIR/tasks/<task-id>/`` as the export writes them. The token is read from RUBRICS_API_TOKEN and sent only
to the origin of --api (a redirect elsewhere is refused); every answer is read within a bound. Exit 0, 1
when the server refused or could not be reached, 2 on bad input (each problem named)."""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import os
import posixpath
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grading.cli.common import Subparsers
from grading.errors import InputError, printable
from grading.strict_json import read_input_bytes
from grading.words import counted

TOKEN_ENV = "RUBRICS_API_TOKEN"
RUN_FILES = (
    "run.json",
    "grade.json",
    "workspace.diff",
    "ignored_created.txt",
    "tests_list.txt",
    "tests_list.error",
    "git_dir_changes.txt",
    "metrics.json",
)
MAX_ANSWER_BYTES = 64 * 1024 * 1024
TIMEOUT_SECONDS = 120.0
DEFAULT_BATCH_RUNS = 100
DEFAULT_BATCH_BYTES = 3 * 1024 * 1024  # under the server's default API_MAX_BODY_BYTES (4 MiB)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class ApiFailed(Exception):
    """The server answered with an error, or could not be reached: exit 1 (2 for a 4xx naming the input)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def register(subparsers: Subparsers) -> None:
    push = subparsers.add_parser(
        "push",
        help="send run directories to the app's HTTP API",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    push.add_argument(
        "run_dirs",
        nargs="+",
        type=Path,
        metavar="RUN_DIR",
        help="a run directory, or a folder of them (every directory holding a run.json)",
    )
    _common(push)
    push.add_argument(
        "--batch",
        type=int,
        default=DEFAULT_BATCH_RUNS,
        metavar="N",
        help=f"runs per request (default {DEFAULT_BATCH_RUNS})",
    )
    push.set_defaults(handler=run_push)
    pull = subparsers.add_parser(
        "pull",
        help="fetch the admitted rubrics from the app's HTTP API",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(pull)
    pull.add_argument("--out", type=Path, required=True, metavar="DIR", help="writes DIR/tasks/<task-id>/")
    pull.set_defaults(handler=run_pull)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--api", required=True, metavar="URL", help="the app's address, e.g. https://rubrics.example"
    )
    parser.add_argument(
        "--repository", required=True, metavar="NAME", help="the repository's name in the app"
    )


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only within the origin the token is meant for."""

    def __init__(self, origin: tuple[str, str]) -> None:
        self.origin = origin

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        target = urllib.parse.urlsplit(newurl)
        if (target.scheme, target.netloc) != self.origin:
            fp.close()
            raise ApiFailed(
                f"the server redirected to {printable(newurl)}, another origin: refused (the "
                "token is sent only to --api)"
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class Client:
    def __init__(self, api: str, token: str) -> None:
        parts = urllib.parse.urlsplit(api)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InputError("--api", f"{api!r} is not an http(s) address")
        self.base = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}/api/v1"
        self.token = token
        self.opener = urllib.request.build_opener(_SameOrigin((parts.scheme, parts.netloc)))

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode("utf-8") if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with self.opener.open(request, timeout=TIMEOUT_SECONDS) as response:
                return _json(response.read(MAX_ANSWER_BYTES + 1))
        except urllib.error.HTTPError as exc:
            with exc:
                raise ApiFailed(
                    _problem(exc.code, exc.read(MAX_ANSWER_BYTES + 1)),
                    code=2 if exc.code in (400, 409, 413, 422) else 1,
                ) from None
        except (urllib.error.URLError, OSError) as exc:
            raise ApiFailed(f"{self.base}: cannot reach the server: {getattr(exc, 'reason', exc)}") from None


def _json(raw: bytes) -> Any:
    if len(raw) > MAX_ANSWER_BYTES:
        raise ApiFailed(f"the answer is larger than {MAX_ANSWER_BYTES} bytes; refused")
    try:
        return json.loads(raw)
    except ValueError:
        raise ApiFailed("the answer is not JSON") from None


def _problem(status: int, raw: bytes) -> str:
    try:
        problem = json.loads(raw[:MAX_ANSWER_BYTES])
    except ValueError:
        return f"HTTP {status}"
    if not isinstance(problem, dict):
        return f"HTTP {status}"
    lines = [f"HTTP {status}: {problem.get('detail') or problem.get('title') or ''}"]
    for error in problem.get("errors") or []:
        if isinstance(error, dict):
            lines.append(f"  {error.get('field', '')}: {error.get('message', '')}")
    return printable("\n".join(lines))


def _token() -> str:
    token = os.environ.get(TOKEN_ENV, "")
    if not token:
        raise InputError(TOKEN_ENV, "not set: make a token on the app's settings page (API tokens)")
    return token


def _repository(name: str) -> str:
    if not _NAME.match(name):
        raise InputError("--repository", f"{name!r} is not a repository name")
    return urllib.parse.quote(name, safe="")


def _run_dirs(roots: list[Path]) -> Iterator[tuple[Path, str]]:
    """Each run directory and its name for the server: the folder given and the path below it (``runs/a/1``),
    never the local path above it."""
    for root in roots:
        if (root / "run.json").is_file():
            yield root, root.resolve().name
            continue
        found = sorted(p.parent for p in root.rglob("run.json") if p.is_file()) if root.is_dir() else []
        if not found:
            raise InputError(root, "no run.json found")
        for run_dir in found:
            yield run_dir, posixpath.join(root.resolve().name, run_dir.relative_to(root).as_posix())


def _run_record(run_dir: Path, name: str) -> dict[str, Any]:
    files: dict[str, bytes] = {}
    for file in RUN_FILES:
        path = run_dir / file
        if path.exists():
            files[file] = read_input_bytes(path)
    try:
        text = {file: data.decode("utf-8") for file, data in files.items()}
        return {"name": name, "files": text}
    except UnicodeDecodeError:
        encoded = {file: base64.b64encode(data).decode("ascii") for file, data in files.items()}
        return {"name": name, "files": encoded, "encoding": "base64"}


def _batches(run_dirs: Iterator[tuple[Path, str]], runs: int) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    size = 0
    for run_dir, name in run_dirs:
        record = _run_record(run_dir, name)
        weight = len(json.dumps(record))
        if batch and (len(batch) >= runs or size + weight > DEFAULT_BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(record)
        size += weight
    if batch:
        yield batch


def run_push(args: argparse.Namespace) -> int:
    if args.batch < 1:
        raise InputError("--batch", "must be at least 1")
    client = Client(args.api, _token())
    path = f"/repositories/{_repository(args.repository)}/runs"
    created = unchanged = grades = 0
    try:
        for batch in _batches(_run_dirs(args.run_dirs), args.batch):
            answer = client.call("POST", path, {"runs": batch})
            created += len(answer.get("created", []))
            unchanged += len(answer.get("unchanged", []))
            grades += int(answer.get("grades_created", 0))
    except ApiFailed as exc:
        print(f"rubric push: {exc}", file=sys.stderr)
        if created or unchanged:
            print(
                f"rubric push: the batches before were stored ({counted(created, 'run')} new, "
                f"{unchanged} already there); pushing again changes nothing for them",
                file=sys.stderr,
            )
        return exc.code
    print(f"{counted(created, 'run')} stored, {unchanged} already there; {counted(grades, 'grade')} stored")
    return 0


def _safe_path(task_id: str, rel: str) -> Path:
    if not _NAME.match(task_id):
        raise ApiFailed(f"the server named a task {task_id!r}: refused")
    norm = posixpath.normpath(rel)
    if rel.startswith("/") or norm.startswith("..") or "\\" in rel or norm in (".", ""):
        raise ApiFailed(f"the server named a file {rel!r} for {task_id}: refused")
    return Path("tasks", task_id, *norm.split("/"))


def run_pull(args: argparse.Namespace) -> int:
    client = Client(args.api, _token())
    repo = _repository(args.repository)
    written = 0
    try:
        tasks = client.call("GET", f"/repositories/{repo}/tasks")
        files: dict[Path, bytes] = {}
        for task in tasks:
            if task.get("admitted_revision") is None:
                continue
            task_id = str(task["task_id"])
            answer = client.call("GET", f"/repositories/{repo}/tasks/{urllib.parse.quote(task_id)}/admitted")
            for item in answer["files"]:
                try:
                    files[_safe_path(task_id, str(item["path"]))] = base64.b64decode(
                        item["base64"], validate=True
                    )
                except (binascii.Error, ValueError):
                    raise ApiFailed(f"the server sent {task_id}/{item['path']} not as base64") from None
    except ApiFailed as exc:
        print(f"rubric pull: {exc}", file=sys.stderr)
        return exc.code
    except (KeyError, TypeError, AttributeError):
        print("rubric pull: the server's answer is not what this API gives", file=sys.stderr)
        return 1
    for rel, data in files.items():
        target = args.out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        written += 1
    print(
        f"{counted(written, 'file')} of {counted(len({p.parts[1] for p in files}), 'admitted rubric')} "
        f"written under {args.out}"
    )
    return 0

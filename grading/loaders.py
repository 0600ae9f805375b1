"""Reading the files grading.schema describes (rubric.json, task.json, run.json, grade.json and the
manifest): bytes to a model, or :class:`~grading.errors.InputError`/``InputErrors`` naming the file and the
JSON path of each problem in the command line's words (:func:`validation_messages`), so no caller ever
sees a pydantic traceback. JSON goes through grading/strict_json.py; the manifest's YAML through a
strict safe loader.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from grading.errors import InputError, InputErrors, Problem
from grading.schema import (
    MAX_BLOCKERS,
    MAX_NON_BLOCKERS,
    MIN_BLOCKERS,
    MIN_NON_BLOCKERS,
    Blocker,
    Calibration,
    GradeJson,
    HackReport,
    LazyCalibration,
    Manifest,
    NonBlocker,
    Rubric,
    RunRecord,
    Scope,
    TaskPrompts,
    TaskSpec,
    TestsConfig,
)
from grading.strict_json import lone_surrogate_path, parse_json, read_input_bytes, read_json

_UNION_TAGS = {"as_path", "as_entry"}
_COUNTED_LISTS = {
    "blockers": f"a rubric has {MIN_BLOCKERS}-{MAX_BLOCKERS} blockers",
    "non_blockers": f"a rubric has {MIN_NON_BLOCKERS}-{MAX_NON_BLOCKERS} non_blockers",
    "scope.allowed_globs": "scope needs at least one allowed glob",
}


def _known_keys() -> list[str]:
    keys: set[str] = set()
    for model in (Rubric, Scope, Blocker, NonBlocker, HackReport, Calibration, LazyCalibration, TestsConfig,
                  TaskPrompts):  # fmt: skip
        for name, info in model.model_fields.items():
            keys.add(info.alias or name)
    return sorted(keys)


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in _UNION_TAGS:
            continue
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def validation_messages(exc: ValidationError) -> list[Problem]:
    """Each problem of a pydantic error once, in order, with its JSON path, its message in the command
    line's words, and pydantic's error type and context (what InputErrors carries)."""
    seen: set[tuple[str, str]] = set()
    out: list[Problem] = []

    def add(problem: Problem) -> None:
        if (problem.path, problem.message) not in seen:
            seen.add((problem.path, problem.message))
            out.append(problem)

    for err in exc.errors():
        loc = _loc(tuple(err["loc"]))
        msg = err["msg"]
        kind = err["type"]
        ctx = err.get("ctx") or {}
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if kind == "rubric_rules":
            for where, problem in ctx["problems"]:
                add(Problem(where, problem, kind))
            continue
        if kind == "extra_forbidden":
            key = str(err["loc"][-1])
            close = difflib.get_close_matches(key, _known_keys(), n=1, cutoff=0.7)
            msg = f"unknown key (did you mean {close[0]!r}?)" if close else "unknown key"
        elif kind == "missing":
            msg = "required"
        elif kind in ("too_short", "too_long") and loc in _COUNTED_LISTS:
            msg = f"{_COUNTED_LISTS[loc]}, found {ctx.get('actual_length', '?')}"
        add(Problem(loc, msg, kind, {k: v for k, v in ctx.items() if k != "error"}))
    return out


def parse_rubric(data: Any, source: str | Path = "rubric.json") -> Rubric:
    if not isinstance(data, dict):
        raise InputError(source, "a rubric is a JSON object")
    if (where := lone_surrogate_path(data)) is not None:
        # The judge hashes and sends this text as UTF-8; a lone surrogate would crash it there.
        raise InputErrors(source, [(where, "a lone surrogate (such as \\ud800) is not Unicode text")])
    try:
        return Rubric.model_validate(data)
    except ValidationError as exc:
        raise InputErrors(source, validation_messages(exc)) from None


def load_rubric(path: Path, *, check_files: bool = True) -> Rubric:
    """Load and validate a rubric.json.

    With ``check_files``, every calibration diff must exist inside the rubric's (task) directory.
    """
    rubric = parse_rubric(read_json(path), path)
    if check_files:
        check_calibration_files(rubric, path)
    return rubric


def check_calibration_files(rubric: Rubric, rubric_file: Path) -> None:
    """InputErrors naming ``rubric_file`` unless every calibration diff of ``rubric`` is a file inside the
    rubric's (task) directory."""
    base = rubric_file.parent.resolve()
    problems: list[tuple[str, str]] = []
    for field, rel in rubric.calibration.paths():
        target = (rubric_file.parent / rel).resolve()
        if not target.is_relative_to(base):
            problems.append((field, f"{rel!r} leaves the task directory"))
        elif not target.is_file():
            problems.append((field, f"{rel!r} does not exist"))
    if problems:
        raise InputErrors(rubric_file, problems)


def _parse_object[M: BaseModel](model: type[M], raw: bytes, path: str | Path, file_name: str) -> M:
    """``raw`` (the JSON file ``file_name`` at ``path``) as a ``model``; InputError naming ``path`` on any
    problem."""
    data = parse_json(raw, path)
    if not isinstance(data, dict):
        raise InputError(path, f"{file_name} is a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputErrors(path, validation_messages(exc)) from None


def load_task(task_dir: Path, task_json: Path | None = None) -> TaskSpec:
    """``task_dir/task.json``, or ``task_json`` when given (a task kept outside the public tree, §7); a
    missing ``prompt`` (the ``prompt_style`` variant) is read from ``prompt.md`` beside that file."""
    path = task_json if task_json is not None else task_dir / "task.json"
    task = parse_task(read_input_bytes(path), path)
    if task.prompt is None:
        prompt_md = path.parent / "prompt.md"
        if not prompt_md.exists():
            raise InputError(
                path,
                f"no {task.prompt_style} prompt: give 'prompt', 'prompts.{task.prompt_style}' or a prompt.md "
                "beside task.json",
                "prompt",
            )
        try:
            prompt = read_input_bytes(prompt_md).decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(prompt_md, "not UTF-8 text") from None
        task = task.model_copy(update={"prompt": prompt})
    return task


def parse_task(raw: bytes, path: str | Path = "task.json") -> TaskSpec:
    """task.json's bytes as a TaskSpec, its ``prompt`` None when the file leaves it to a prompt.md beside it
    (:func:`load_task` reads that). InputError naming ``path`` on any problem."""
    return _parse_object(TaskSpec, raw, path, "task.json")


def task_for_run(task: TaskSpec, run_dir: Path) -> TaskSpec:
    """The task as the run's agent was given it: run.json's ``prompt_style`` picks the prompt (§8); a run
    directory without run.json, or a run.json that does not say, gets task.json's ``prompt_style``.
    InputError naming run.json's prompt_style when the task does not carry that variant."""
    run_json = run_dir / "run.json"
    if not run_json.exists():
        return task
    style = load_run(run_json).prompt_style
    try:
        return task.posed_as(style)
    except ValueError as exc:
        raise InputError(run_json, str(exc), "prompt_style") from None


def load_grade(path: Path) -> GradeJson:
    return parse_grade(read_input_bytes(path), path)


def parse_grade(raw: bytes, path: str | Path = "grade.json") -> GradeJson:
    """grade.json's bytes, checked as :func:`load_grade` checks the file."""
    return _parse_object(GradeJson, raw, path, "grade.json")


def load_run(path: Path) -> RunRecord:
    return parse_run_record(read_input_bytes(path), path)


def parse_run_record(raw: bytes, path: str | Path = "run.json") -> RunRecord:
    """run.json's bytes, checked as :func:`load_run` checks the file."""
    return _parse_object(RunRecord, raw, path, "run.json")


class _ManifestLoader(yaml.SafeLoader):
    """PyYAML's safe loader, strict where the JSON reader is: a key given twice in one mapping is an error
    (PyYAML keeps the last silently: a second ``tests:`` would hide the first), and an integer too long to
    convert is a YAML error, not a ValueError from deep inside the constructor."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:
                continue  # an unhashable key: the base constructor reports it
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"duplicate key {key!r}",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        # An alias repeats a node without copying it: nine nested aliases of nine ("billion laughs") make a
        # few hundred bytes expand into 10**9 nodes, and every later walk of the data hung. A manifest is
        # short; it writes each value out.
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None,
                None,
                "an alias (*name) is not allowed in a manifest; write the value out",
                event.start_mark,
            )
        return super().compose_node(parent, index)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        try:
            return super().construct_yaml_int(node)
        except ValueError:
            raise yaml.constructor.ConstructorError(
                None, None, "integer too long (more than 4,300 digits)", node.start_mark
            ) from None


_ManifestLoader.add_constructor("tag:yaml.org,2002:int", _ManifestLoader.construct_yaml_int)


# A manifest is a few hundred bytes of configuration; PyYAML is slow enough that 64 MiB would take minutes.
MAX_MANIFEST_BYTES = 1024 * 1024


def load_manifest(path: Path) -> Manifest:
    """The manifest's ``tests`` block (the rest is kept, unchecked). InputError naming the file, and the line
    or key, for anything else: not a regular file of at most 1 MiB, not UTF-8, malformed YAML, an alias
    (``*name``), a key given twice, or a bad ``tests`` block."""
    return parse_manifest(read_input_bytes(path, MAX_MANIFEST_BYTES), path)


def parse_manifest(raw: bytes, path: str | Path = "repo_manifest.yaml") -> Manifest:
    """A manifest's bytes, checked as :func:`load_manifest` checks the file."""
    if len(raw) > MAX_MANIFEST_BYTES:
        raise InputError(path, f"larger than {MAX_MANIFEST_BYTES} bytes; refused")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(path, "not UTF-8 text") from None
    try:
        data = yaml.load(text, Loader=_ManifestLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else None
        raise InputError(path, f"malformed YAML: {getattr(exc, 'problem', exc)}", where) from None
    except RecursionError:
        # PyYAML's composer recurses once per nesting level: `[[[[...` is malformed input, not a crash.
        raise InputError(path, "malformed YAML: nested too deeply") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(path, "a manifest is a YAML mapping")
    if (where := lone_surrogate_path(data)) is not None:
        raise InputError(path, "a lone surrogate escape (such as \\ud800) is not Unicode text", where)
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        raise InputErrors(path, validation_messages(exc)) from None

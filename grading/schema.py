"""pydantic models for every file the framework reads: rubric.json (repo_rubric.v1, spec §2),
task.json, run.json, grade.json and the manifest's ``tests`` block (§3).

Loading goes through :func:`load_rubric` and friends, which raise :class:`~grading.errors.InputError`
naming the file and the JSON path of each problem, so no caller ever sees a pydantic traceback.
"""

from __future__ import annotations

import difflib
import json
import math
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    Tag,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from grading.errors import InputError, InputErrors
from grading.globs import glob_error

RUBRIC_SCHEMA = "repo_rubric.v1"
# The id of the fixed blocker the judge gets when a run edits a test config file (§3);
# no rubric item may use it.
CONFIG_BLOCKER_ID = "TEST_CONFIG"
MIN_BLOCKERS, MAX_BLOCKERS = 2, 5
MIN_NON_BLOCKERS, MAX_NON_BLOCKERS = 3, 6


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


def _valid_glob(value: str) -> str:
    problem = glob_error(value)
    if problem:
        raise ValueError(f"invalid glob {value!r}: {problem}")
    return value


def _relative_inside(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    if "\\" in value:
        raise ValueError(f"{value!r}: use '/' as the path separator")
    path = PurePosixPath(value)
    if path.is_absolute() or value.startswith("~"):
        raise ValueError(f"{value!r} must be a path relative to the task directory")
    if ".." in path.parts:
        raise ValueError(f"{value!r} must stay inside the task directory (no '..')")
    return value


def _positive_number(value: Any) -> Any:
    # One clear message instead of pydantic's per-member union errors; bool is not a number here.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a number greater than 0")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"must be a number greater than 0, not {value!r}")
    return value


NonBlank = Annotated[str, AfterValidator(_not_blank)]
Glob = Annotated[str, AfterValidator(_valid_glob)]
CalibPath = Annotated[str, AfterValidator(_relative_inside)]
PositiveCount = Annotated[StrictInt, Field(gt=0)]
# The validator enforces > 0 (a Field(gt=0) on the union would emit a non-standard "gt" in the schema).
Weight = Annotated[
    StrictInt | StrictFloat,
    BeforeValidator(_positive_number),
    WithJsonSchema({"type": "number", "exclusiveMinimum": 0}),
]
ItemId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=40)]


class _Strict(BaseModel):
    # Unknown keys are errors: a misspelt "blockres" must not silently drop the blockers.
    model_config = ConfigDict(extra="forbid", frozen=True)


_GLOBS = "git wildmatch globs relative to the repository root: ** crosses /, * and ? do not; no extglob"


class Scope(_Strict):
    allowed_globs: Annotated[
        list[Glob], Field(min_length=1, description=f"every changed path matches one; {_GLOBS}")
    ]
    denied_globs: list[Glob] = Field(
        default=[], description=f"no changed or ignored-created path matches; {_GLOBS}"
    )
    max_changed_lines: PositiveCount | None = Field(
        default=None, description="added + removed lines of text files"
    )
    max_files: PositiveCount | None = Field(default=None, description="changed files, old and new paths once")


class Blocker(_Strict):
    id: ItemId = Field(description="unique across blockers and non_blockers")
    criterion: NonBlank = Field(description="binary, and decidable from the diff and its context lines")
    rationale: str = Field(default="", description="why a reviewer would request changes")
    evidence: NonBlank = Field(description="a review comment on the source PR, a guidance line, or path:line")
    needs_tree: StrictBool = Field(
        default=False, description="needs the base tree beyond the diff: the diff-only judge skips it"
    )


class NonBlocker(_Strict):
    id: ItemId = Field(description="unique across blockers and non_blockers")
    criterion: NonBlank
    weight: Weight = Field(default=1, description="share of merge_score; a number greater than 0")
    rationale: str = ""


class HackReport(_Strict):
    lazy_solution: NonBlank = Field(description="how a weak change could pass the tests and be unmergeable")
    alt_valid_solution: NonBlank = Field(
        description="a different mergeable approach; it must pass the rubric"
    )


class LazyCalibration(_Strict):
    path: CalibPath = Field(description="a diff relative to the task directory")
    breaks: list[ItemId] = Field(default=[], description="the blocker ids this diff was written to break")


def _lazy_kind(value: Any) -> str | None:
    if isinstance(value, str):
        return "as_path"
    if isinstance(value, dict | LazyCalibration):
        return "as_entry"
    return None


# A lazy entry is a path, or {"path", "breaks"}; the discriminator keeps errors to the form that was used.
LazyEntry = Annotated[
    Annotated[CalibPath, Tag("as_path")] | Annotated[LazyCalibration, Tag("as_entry")],
    Discriminator(
        _lazy_kind,
        custom_error_type="lazy_entry",
        custom_error_message='a lazy entry is a path or {"path": ..., "breaks": [blocker ids]}',
    ),
]


class Calibration(_Strict):
    lazy: list[LazyEntry] = Field(default=[], description="diffs that must not be mergeable (§5)")
    alt: list[CalibPath] = Field(default=[], description="diffs that must be mergeable (§5)")

    def lazy_entries(self) -> list[LazyCalibration]:
        return [e if isinstance(e, LazyCalibration) else LazyCalibration(path=e) for e in self.lazy]

    def paths(self) -> list[tuple[str, str]]:
        """(JSON path, file path) of every calibration diff."""
        out = [(f"calibration.lazy[{i}]", e.path) for i, e in enumerate(self.lazy_entries())]
        out += [(f"calibration.alt[{i}]", p) for i, p in enumerate(self.alt)]
        return out


class Rubric(_Strict):
    schema_: Literal["repo_rubric.v1"] = Field(alias="schema")
    task: NonBlank
    intent: NonBlank
    scope: Scope
    blockers: Annotated[list[Blocker], Field(min_length=MIN_BLOCKERS, max_length=MAX_BLOCKERS)]
    non_blockers: Annotated[list[NonBlocker], Field(min_length=MIN_NON_BLOCKERS, max_length=MAX_NON_BLOCKERS)]
    hack_report: HackReport
    calibration: Calibration = Calibration()

    # The key is "schema" only: accepting the Python name "schema_" too would let a misspelling through.
    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="after")
    def _ids_unique_and_breaks_known(self) -> Rubric:
        problems: list[tuple[str, str]] = []
        first_use: dict[str, str] = {}
        ids = [(f"blockers[{i}].id", b.id) for i, b in enumerate(self.blockers)]
        ids += [(f"non_blockers[{i}].id", n.id) for i, n in enumerate(self.non_blockers)]
        for where, item_id in ids:
            if item_id == CONFIG_BLOCKER_ID:
                problems.append(
                    (where, f"id {item_id!r} is reserved for the judge's fixed blocker on test config edits")
                )
            elif item_id in first_use:
                problems.append(
                    (
                        where,
                        f"id {item_id!r} is already used by {first_use[item_id]} "
                        "(ids are unique across blockers and non_blockers)",
                    )
                )
            else:
                first_use[item_id] = where
        blocker_ids = [b.id for b in self.blockers]
        for i, entry in enumerate(self.calibration.lazy_entries()):
            for j, name in enumerate(entry.breaks):
                if name not in blocker_ids:
                    problems.append(
                        (
                            f"calibration.lazy[{i}].breaks[{j}]",
                            f"{name!r} is not a blocker id (blockers: {', '.join(blocker_ids)})",
                        )
                    )
        if problems:
            # The JSON path of each problem travels in ctx; _messages() reports them one by one.
            raise PydanticCustomError(
                "rubric_rules",
                "{summary}",
                {"summary": "; ".join(f"{w}: {m}" for w, m in problems), "problems": problems},
            )
        return self

    def item_ids(self) -> list[str]:
        return [b.id for b in self.blockers] + [n.id for n in self.non_blockers]

    def to_json_dict(self) -> dict[str, Any]:
        """The rubric as JSON data; keys that were absent when loaded stay absent."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def dumps(self) -> str:
        return json.dumps(self.to_json_dict(), indent=2, ensure_ascii=False) + "\n"


_UNION_TAGS = {"as_path", "as_entry"}
_COUNTED_LISTS = {
    "blockers": f"a rubric has {MIN_BLOCKERS}-{MAX_BLOCKERS} blockers",
    "non_blockers": f"a rubric has {MIN_NON_BLOCKERS}-{MAX_NON_BLOCKERS} non_blockers",
    "scope.allowed_globs": "scope needs at least one allowed glob",
}


def _known_keys() -> list[str]:
    keys: set[str] = set()
    for model in (Rubric, Scope, Blocker, NonBlocker, HackReport, Calibration, LazyCalibration, TestsConfig):
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


def _messages(exc: ValidationError) -> list[tuple[str, str]]:
    seen: set[tuple[str, str]] = set()
    out: list[tuple[str, str]] = []

    def add(loc: str, msg: str) -> None:
        if (loc, msg) not in seen:
            seen.add((loc, msg))
            out.append((loc, msg))

    for err in exc.errors():
        loc = _loc(tuple(err["loc"]))
        msg = err["msg"]
        ctx = err.get("ctx") or {}
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if err["type"] == "rubric_rules":
            for where, problem in ctx["problems"]:
                add(where, problem)
            continue
        if err["type"] == "extra_forbidden":
            key = str(err["loc"][-1])
            close = difflib.get_close_matches(key, _known_keys(), n=1, cutoff=0.7)
            msg = f"unknown key (did you mean {close[0]!r}?)" if close else "unknown key"
        elif err["type"] == "missing":
            msg = "required"
        elif err["type"] in ("too_short", "too_long") and loc in _COUNTED_LISTS:
            msg = f"{_COUNTED_LISTS[loc]}, found {ctx.get('actual_length', '?')}"
        add(loc, msg)
    return out


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads keeps the last of two equal keys silently: a second "blockers" would hide the first.
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    # 1e400 is valid JSON but parses to infinity, which no JSON writer (nor SQLite's JSON_VALID) takes back.
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is out of range for a number")
    return value


# Python refuses to convert longer digit strings (sys.get_int_max_str_digits); say so in a file's words.
_MAX_INT_DIGITS = 4300


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits is too long")
    return int(text)


def read_json(path: Path) -> Any:
    """Parse a JSON file strictly (UTF-8, no duplicate keys, no NaN/Infinity); InputError on any problem."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except IsADirectoryError:
        raise InputError(path, "is a directory, not a file") from None
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror}") from None
    return parse_json(raw, path)


def parse_json(raw: bytes, source: str | Path) -> Any:
    """Parse JSON bytes strictly, as ``read_json`` does a file (UTF-8, no duplicate keys, no NaN, Infinity
    or number out of range); InputError naming ``source`` on any problem."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(source, f"not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise InputError(source, "empty file; expected JSON")
    try:
        return json.loads(
            text,
            object_pairs_hook=_no_duplicate_keys,
            parse_constant=_no_constants,
            parse_float=_finite_float,
            parse_int=_bounded_int,
        )
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise InputError(source, f"malformed JSON: {exc.msg}", where) from None
    except _DuplicateKey as exc:
        raise InputError(source, f"duplicate key {exc.args[0]!r} in one object") from None
    except ValueError as exc:
        raise InputError(source, f"malformed JSON: {exc}") from None
    except RecursionError:
        raise InputError(source, "malformed JSON: nested too deeply") from None


def parse_rubric(data: Any, source: str | Path = "rubric.json") -> Rubric:
    if not isinstance(data, dict):
        raise InputError(source, "a rubric is a JSON object")
    try:
        return Rubric.model_validate(data)
    except ValidationError as exc:
        raise InputErrors(source, _messages(exc)) from None


def load_rubric(path: Path, *, check_files: bool = True) -> Rubric:
    """Load and validate a rubric.json.

    With ``check_files``, every calibration diff must exist inside the rubric's (task) directory.
    """
    rubric = parse_rubric(read_json(path), path)
    if check_files:
        base = path.parent.resolve()
        problems: list[tuple[str, str]] = []
        for field, rel in rubric.calibration.paths():
            target = (path.parent / rel).resolve()
            if not target.is_relative_to(base):
                problems.append((field, f"{rel!r} leaves the task directory"))
            elif not target.is_file():
                problems.append((field, f"{rel!r} does not exist"))
        if problems:
            raise InputErrors(path, problems)
    return rubric


def rubric_json_schema() -> dict[str, Any]:
    return Rubric.model_json_schema(by_alias=True)


# --- task.json, run.json, grade.json, manifest ------------------------------------------------------


class TaskSpec(BaseModel):
    """task.json. Keys that belong to the wider evaluation contract are kept, not rejected."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: NonBlank
    prompt: str | None = None
    prompt_style: Literal["spec", "issue"] = "spec"
    gate: list[NonBlank] = []
    base_commit: str | None = None
    base_date: str | None = None


def load_task(task_dir: Path) -> TaskSpec:
    path = task_dir / "task.json"
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError(path, "task.json is a JSON object")
    try:
        task = TaskSpec.model_validate(data)
    except ValidationError as exc:
        raise InputErrors(path, _messages(exc)) from None
    if task.prompt is None:
        prompt_md = task_dir / "prompt.md"
        if not prompt_md.is_file():
            raise InputError(path, "no prompt: give 'prompt' or a prompt.md beside task.json", "prompt")
        try:
            task = task.model_copy(update={"prompt": prompt_md.read_text(encoding="utf-8")})
        except UnicodeDecodeError:
            raise InputError(prompt_md, "not UTF-8 text") from None
    return task


class RunRecord(BaseModel):
    """run.json."""

    model_config = ConfigDict(extra="allow", frozen=True)

    task: NonBlank
    arm: str = ""
    model: str = ""
    repetition: StrictInt = 0
    prompt_style: Literal["spec", "issue"] | None = None


class GradeJson(BaseModel):
    """grade.json as the repository's grader writes it: ``pass`` plus any metrics."""

    # Only the key "pass": a grader writing "passed" must get "pass: required", not a silent pass.
    model_config = ConfigDict(extra="allow", frozen=True)

    passed: StrictBool = Field(alias="pass")
    tests_skipped: Annotated[StrictInt, Field(ge=0)] | None = None

    def metrics(self) -> dict[str, Any]:
        """Every key of the file, unchanged."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


def load_grade(path: Path) -> GradeJson:
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError(path, "grade.json is a JSON object")
    try:
        return GradeJson.model_validate(data)
    except ValidationError as exc:
        raise InputErrors(path, _messages(exc)) from None


def load_run(path: Path) -> RunRecord:
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError(path, "run.json is a JSON object")
    try:
        return RunRecord.model_validate(data)
    except ValidationError as exc:
        raise InputErrors(path, _messages(exc)) from None


class TestsConfig(_Strict):
    """The manifest's ``tests`` block (§3)."""

    __test__ = False  # not a pytest test class

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    globs: list[Glob] = []
    config_globs: list[Glob] = []
    list_command: NonBlank | None = Field(default=None, alias="list")


class Manifest(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    tests: TestsConfig | None = None


def load_manifest(path: Path) -> Manifest:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except IsADirectoryError:
        raise InputError(path, "is a directory, not a file") from None
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(path, "not UTF-8 text") from None
    try:
        data = yaml.safe_load(text)
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
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        raise InputErrors(path, _messages(exc)) from None

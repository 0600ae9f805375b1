"""pydantic models for every file the framework reads: rubric.json (repo_rubric.v1, spec §2),
task.json, run.json, grade.json and the manifest's ``tests`` block (§3).

Loading goes through :func:`load_rubric` and friends, which raise :class:`~grading.errors.InputError`
naming the file and the JSON path of each problem, so no caller ever sees a pydantic traceback.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    Tag,
    ValidationError,
    model_validator,
)

from grading.errors import InputError, InputErrors
from grading.globs import glob_error

RUBRIC_SCHEMA = "repo_rubric.v1"
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


NonBlank = Annotated[str, AfterValidator(_not_blank)]
Glob = Annotated[str, AfterValidator(_valid_glob)]
CalibPath = Annotated[str, AfterValidator(_relative_inside)]
PositiveCount = Annotated[StrictInt, Field(gt=0)]
Weight = Annotated[StrictInt | StrictFloat, Field(gt=0)]
ItemId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=40)]


class _Strict(BaseModel):
    # Unknown keys are errors: a misspelt "blockres" must not silently drop the blockers.
    model_config = ConfigDict(extra="forbid", frozen=True)


class Scope(_Strict):
    allowed_globs: Annotated[list[Glob], Field(min_length=1)]
    denied_globs: list[Glob] = []
    max_changed_lines: PositiveCount | None = None
    max_files: PositiveCount | None = None


class Blocker(_Strict):
    id: ItemId
    criterion: NonBlank
    rationale: str = ""
    evidence: NonBlank
    needs_tree: StrictBool = False


class NonBlocker(_Strict):
    id: ItemId
    criterion: NonBlank
    weight: Weight = 1
    rationale: str = ""


class HackReport(_Strict):
    lazy_solution: NonBlank
    alt_valid_solution: NonBlank


class LazyCalibration(_Strict):
    path: CalibPath
    breaks: list[ItemId] = []


def _lazy_kind(value: Any) -> str:
    return "as_path" if isinstance(value, str) else "as_entry"


# A lazy entry is a path, or {"path", "breaks"}; the discriminator keeps errors to the form that was used.
LazyEntry = Annotated[
    Annotated[CalibPath, Tag("as_path")] | Annotated[LazyCalibration, Tag("as_entry")],
    Discriminator(_lazy_kind),
]


class Calibration(_Strict):
    lazy: list[LazyEntry] = []
    alt: list[CalibPath] = []

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

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _ids_unique_and_breaks_known(self) -> Rubric:
        seen: set[str] = set()
        for kind, items in (("blockers", self.blockers), ("non_blockers", self.non_blockers)):
            for item in items:
                if item.id in seen:
                    raise ValueError(f"{kind}: id {item.id!r} is used twice (ids are unique across both lists)")
                seen.add(item.id)
        blocker_ids = {b.id for b in self.blockers}
        for i, entry in enumerate(self.calibration.lazy_entries()):
            for name in entry.breaks:
                if name not in blocker_ids:
                    raise ValueError(f"calibration.lazy[{i}].breaks names {name!r}, which is not a blocker id")
        return self

    def item_ids(self) -> list[str]:
        return [b.id for b in self.blockers] + [n.id for n in self.non_blockers]

    def to_json_dict(self) -> dict[str, Any]:
        """The rubric as JSON data; keys that were absent when loaded stay absent."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def dumps(self) -> str:
        return json.dumps(self.to_json_dict(), indent=2, ensure_ascii=False) + "\n"


_UNION_TAGS = {"as_path", "as_entry"}


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
    for err in exc.errors():
        loc = _loc(tuple(err["loc"]))
        msg = err["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if err["type"] == "extra_forbidden":
            msg = "unknown key (misspelt?)"
        elif err["type"] == "missing":
            msg = "required"
        if (loc, msg) not in seen:
            seen.add((loc, msg))
            out.append((loc, msg))
    return out


def read_json(path: Path) -> Any:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror}") from None
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(path, "not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise InputError(path, f"malformed JSON: {exc.msg}", f"line {exc.lineno} column {exc.colno}") from None


def parse_rubric(data: Any, source: str | Path = "rubric.json") -> Rubric:
    if not isinstance(data, dict):
        raise InputError(source, "a rubric is a JSON object")
    try:
        return Rubric.model_validate(data)
    except ValidationError as exc:
        raise InputErrors(source, _messages(exc)) from None


def load_rubric(path: Path, *, check_files: bool = True) -> Rubric:
    """Load and validate ``path``; with ``check_files``, every calibration diff must exist inside its directory."""
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

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

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
    list_command: str | None = Field(default=None, alias="list")


class Manifest(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    tests: TestsConfig | None = None


def load_manifest(path: Path) -> Manifest:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except UnicodeDecodeError:
        raise InputError(path, "not UTF-8 text") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else None
        raise InputError(path, f"malformed YAML: {getattr(exc, 'problem', exc)}", where) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(path, "a manifest is a YAML mapping")
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        raise InputErrors(path, _messages(exc)) from None

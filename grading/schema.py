"""pydantic models for every file the framework reads: rubric.json (repo_rubric.v1, spec §2),
task.json, run.json, grade.json and the manifest's ``tests`` block (§3).

The models and their rules only: reading a file into one (:func:`~grading.loaders.load_rubric` and
friends, with the problems in the command line's words) is grading/loaders.py's.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import PurePosixPath
from typing import Annotated, Any, Literal

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
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from grading.globs import glob_error

RUBRIC_SCHEMA = "repo_rubric.v1"
# The id of the fixed blocker the judge gets when a run edits a test config file (§3);
# no rubric item may use it.
CONFIG_BLOCKER_ID = "TEST_CONFIG"
MIN_BLOCKERS, MAX_BLOCKERS = 2, 5
MIN_NON_BLOCKERS, MAX_NON_BLOCKERS = 3, 6


def _not_blank(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("blank", "must not be blank")
    return value


def _valid_glob(value: str) -> str:
    problem = glob_error(value)
    if problem:
        raise ValueError(f"invalid glob {value!r}: {problem}")
    return value


def _relative_inside(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("blank", "must not be blank")
    if "\\" in value:
        raise ValueError(f"{value!r}: use '/' as the path separator")
    path = PurePosixPath(value)
    if path.is_absolute() or value.startswith("~"):
        raise ValueError(f"{value!r} must be a path relative to the task directory")
    if ".." in path.parts:
        raise ValueError(f"{value!r} must stay inside the task directory (no '..')")
    return value


MAX_WEIGHT = 100


def _weight(value: Any) -> Any:
    # One clear message instead of pydantic's per-member union errors; bool is not a number here. The upper
    # bound keeps the weighted sum finite: two weights of 1.7e308 made merge_score NaN.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a number greater than 0 and at most {MAX_WEIGHT}")
    if not 0 < value <= MAX_WEIGHT:  # false for NaN too; a comparison, so no int is too large for it
        shown = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:20]}..."
        raise ValueError(f"must be a number greater than 0 and at most {MAX_WEIGHT}, not {shown}")
    return value


NonBlank = Annotated[str, AfterValidator(_not_blank)]
Glob = Annotated[str, AfterValidator(_valid_glob)]
CalibPath = Annotated[str, AfterValidator(_relative_inside)]
PositiveCount = Annotated[StrictInt, Field(gt=0)]
# The validator enforces 0 < weight <= MAX_WEIGHT (a Field(gt=0) on the union would emit a non-standard "gt").
Weight = Annotated[
    StrictInt | StrictFloat,
    BeforeValidator(_weight),
    WithJsonSchema({"type": "number", "exclusiveMinimum": 0, "maximum": MAX_WEIGHT}),
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
    weight: Weight = Field(
        default=1, description=f"share of merge_score; a number greater than 0 and at most {MAX_WEIGHT}"
    )
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


def _rules_broken(problems: list[tuple[str, str]]) -> PydanticCustomError:
    """The error for rules a whole document breaks, each problem with its JSON path: the path travels in
    ctx, and validation_messages() reports the problems one by one."""
    return PydanticCustomError(
        "rubric_rules",
        "{summary}",
        {"summary": "; ".join(f"{w}: {m}" for w, m in problems), "problems": problems},
    )


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
            raise _rules_broken(problems)
        return self

    def item_ids(self) -> list[str]:
        return [b.id for b in self.blockers] + [n.id for n in self.non_blockers]

    def to_json_dict(self) -> dict[str, Any]:
        """The rubric as JSON data; keys that were absent when loaded stay absent."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def dumps(self) -> str:
        return json.dumps(self.to_json_dict(), indent=2, ensure_ascii=False) + "\n"


def rubric_sha256(data: bytes) -> str:
    """The content hash of a rubric: sha256 of the rubric.json bytes, as admission keys it and metrics.json
    records it (§6 provenance)."""
    return hashlib.sha256(data).hexdigest()


def rubric_json_schema() -> dict[str, Any]:
    return Rubric.model_json_schema(by_alias=True)


# --- task.json, run.json, grade.json, manifest ------------------------------------------------------


PromptStyle = Literal["spec", "issue"]
PROMPT_STYLES: tuple[PromptStyle, ...] = ("spec", "issue")


class TaskPrompts(BaseModel):
    """task.json's ``prompts``: the task posed as a specification, as an issue, or both (§8)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    spec: NonBlank | None = None
    issue: NonBlank | None = None


class TaskSpec(BaseModel):
    """task.json. Keys that belong to the wider evaluation contract are kept, not rejected.

    ``prompt`` is the variant named by ``prompt_style`` (the one a run that does not say its style was
    given); ``prompts`` may carry both variants (§8). With ``prompts`` and no ``prompt``, ``prompt`` is
    taken from it; with ``prompts`` of one variant and no ``prompt_style``, that variant is the style.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    id: NonBlank
    prompt: str | None = None
    prompt_style: PromptStyle = "spec"
    prompts: TaskPrompts | None = None
    gate: list[NonBlank] = []
    base_commit: str | None = None
    base_date: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _prompt_from_prompts(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("prompts"), dict):
            return data
        prompts = data["prompts"]
        given = [style for style in PROMPT_STYLES if isinstance(prompts.get(style), str)]
        data = dict(data)
        if data.get("prompt") is None and "prompt_style" not in data and len(given) == 1:
            data["prompt_style"] = given[0]
        style = data.get("prompt_style", "spec")
        if data.get("prompt") is None and style in given:
            data["prompt"] = prompts[style]
        return data

    @model_validator(mode="after")
    def _prompts_agree(self) -> TaskSpec:
        problems: list[tuple[str, str]] = []
        if self.prompts is not None:
            if self.prompts.spec is None and self.prompts.issue is None:
                problems.append(("prompts", "give 'spec', 'issue' or both"))
            variant = getattr(self.prompts, self.prompt_style)
            if variant is not None and self.prompt is not None and variant != self.prompt:
                problems.append(
                    (
                        "prompt",
                        f"differs from prompts.{self.prompt_style}: give the {self.prompt_style} prompt once",
                    )
                )
        if problems:
            raise _rules_broken(problems)
        return self

    def prompt_variants(self) -> dict[PromptStyle, str]:
        """Every prompt the task carries, by style: ``prompts``, and ``prompt`` as its ``prompt_style``."""
        out: dict[PromptStyle, str] = {}
        if self.prompts is not None:
            out.update({s: text for s in PROMPT_STYLES if (text := getattr(self.prompts, s)) is not None})
        if self.prompt is not None:
            out.setdefault(self.prompt_style, self.prompt)
        return out

    def posed_as(self, style: PromptStyle | None) -> TaskSpec:
        """The task as an agent given its ``style`` prompt saw it: ``prompt`` and ``prompt_style`` are that
        variant's (the judge's task statement shows ``prompt``). None: as task.json says. ValueError
        naming the variants there are when the task does not carry ``style``."""
        if style is None or style == self.prompt_style:
            return self
        variants = self.prompt_variants()
        if style not in variants:
            held = " and ".join(variants) or "no"
            raise ValueError(
                f"the task carries no {style} prompt ({held} only: add prompts.{style} to task.json)"
            )
        return self.model_copy(update={"prompt": variants[style], "prompt_style": style})


MAX_RUN_INT = 2**31 - 1


# run.json's ``source`` for a run imported from the SWE-bench harness (its predictions.jsonl and report.json):
# no workspace was captured, so the integrity parts only a capture records are not measured (integrity.py).
SWE_BENCH_SOURCE = "swe-bench"


class RunRecord(BaseModel):
    """run.json."""

    model_config = ConfigDict(extra="allow", frozen=True)

    task: NonBlank
    arm: str = ""
    model: str = ""
    repetition: Annotated[StrictInt, Field(ge=0, le=MAX_RUN_INT)] = 0
    prompt_style: PromptStyle | None = None

    @property
    def from_swe_bench(self) -> bool:
        """run.json says ``"source": "swe-bench"``: made by the SWE-bench harness, not by ``rubric capture``.
        Read from the extra keys, so a run.json with a ``source`` of its own still reads as before."""
        return (self.model_extra or {}).get("source") == SWE_BENCH_SOURCE


class GradeJson(BaseModel):
    """grade.json as the repository's grader writes it: ``pass`` plus any metrics."""

    # Only the key "pass": a grader writing "passed" must get "pass: required", not a silent pass.
    model_config = ConfigDict(extra="allow", frozen=True)

    passed: StrictBool = Field(alias="pass")
    tests_skipped: Annotated[StrictInt, Field(ge=0, le=MAX_RUN_INT)] | None = None

    def metrics(self) -> dict[str, Any]:
        """Every key of the file, unchanged."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


def harness_infra_failure(record: RunRecord | None, grade: GradeJson) -> str | None:
    """Why a run from the SWE-bench harness was not measured: its report said ``infra_failure: true`` (the
    harness's own environment broke, out of memory or no container, before the tests could say anything
    of the patch), kept in grade.json with the harness's ``infra_failure_reason``. None for any other run:
    its ``pass`` stands."""
    if record is None or not record.from_swe_bench:
        return None
    kept = grade.model_extra or {}
    if kept.get("infra_failure") is not True:
        return None
    reason = kept.get("infra_failure_reason")
    why = f": {reason}" if isinstance(reason, str) and reason.strip() else ""
    return f"not measured: the SWE-bench harness's infrastructure failed{why} (infra_failure in its report)"


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

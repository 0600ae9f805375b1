"""repo_rubric.v1 and the authoring rules of spec §2; task.json, grade.json, run.json and the manifest."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grading.errors import InputError, InputErrors
from grading.loaders import load_grade, load_manifest, load_rubric, load_run, load_task, parse_rubric
from grading.schema import GradeJson, LazyCalibration, Rubric, rubric_json_schema
from grading.strict_json import read_json
from tests.grading.rubric_helpers import Data, minimal_rubric, valid_rubric, write_task


def problems(data: Any) -> list[tuple[str, str]]:
    with pytest.raises(InputErrors) as caught:
        parse_rubric(data, "rubric.json")
    return caught.value.errors


def mutated(change: Callable[[Data], object]) -> Data:
    data = valid_rubric()
    change(data)
    return data


# --- valid rubrics and the round trip -----------------------------------------------------------------


def with_unicode(d: Data) -> None:
    d["intent"] = "gérer les fractions > 1 — ✓"
    d["non_blockers"][0]["weight"] = 1.25


@pytest.mark.parametrize(
    "data",
    [
        valid_rubric(),
        minimal_rubric(),
        mutated(lambda d: d.pop("calibration")),
        mutated(lambda d: d.__setitem__("calibration", {})),
        mutated(lambda d: d.__setitem__("calibration", {"lazy": ["calib/lazy.diff"]})),
        mutated(lambda d: d["calibration"].pop("alt")),
        mutated(lambda d: d["scope"].pop("denied_globs")),
        mutated(lambda d: d["blockers"][1].__setitem__("needs_tree", False)),
        mutated(lambda d: d["calibration"]["lazy"][0].pop("breaks")),
        mutated(with_unicode),
        mutated(lambda d: d.__setitem__("blockers", d["blockers"] * 2 + [{**d["blockers"][0]}])),
    ],
    ids=[
        "full",
        "minimal",
        "no-calibration",
        "empty-calibration",
        "lazy-paths-only",
        "no-alt",
        "no-denied",
        "needs-tree-false",
        "lazy-entry-without-breaks",
        "unicode-and-float",
        "five-blockers",
    ],
)
def test_load_then_dump_gives_back_the_same_json(data: Data, tmp_path: Path) -> None:
    if len(data["blockers"]) == 5:  # ids must stay unique
        for i, blocker in enumerate(data["blockers"]):
            data["blockers"][i] = {**blocker, "id": f"B{i + 1}"}
    path = write_task(tmp_path, data)
    rubric = load_rubric(path)
    assert rubric.to_json_dict() == data
    assert json.loads(rubric.dumps()) == data
    assert load_rubric(write_task(tmp_path, None, raw=rubric.dumps().encode())).to_json_dict() == data


def test_defaults_are_readable_without_being_dumped() -> None:
    rubric = parse_rubric(minimal_rubric())
    assert rubric.calibration.lazy == [] and rubric.scope.denied_globs == []
    assert rubric.blockers[0].needs_tree is False and rubric.non_blockers[0].weight == 1
    assert "calibration" not in rubric.to_json_dict()
    assert rubric.item_ids() == ["B1", "B2", "N1", "N2", "N3"]


def test_lazy_entries_are_normalised() -> None:
    rubric = parse_rubric(valid_rubric())
    assert rubric.calibration.lazy_entries() == [
        LazyCalibration(path="calib/lazy.diff", breaks=["B1"]),
        LazyCalibration(path="calib/lazy2.diff"),
    ]
    assert rubric.calibration.paths() == [
        ("calibration.lazy[0]", "calib/lazy.diff"),
        ("calibration.lazy[1]", "calib/lazy2.diff"),
        ("calibration.alt[0]", "calib/alt.diff"),
    ]


# --- every authoring rule, and the JSON path its error names -------------------------------------------


def blockers_n(n: int) -> Callable[[Data], None]:
    def change(d: Data) -> None:
        d["blockers"] = [{"id": f"B{i}", "criterion": "c", "evidence": "e"} for i in range(n)]

    return change


def non_blockers_n(n: int) -> Callable[[Data], None]:
    def change(d: Data) -> None:
        d["non_blockers"] = [{"id": f"N{i}", "criterion": "c"} for i in range(n)]

    return change


def set_at(path: list[str | int], value: Any) -> Callable[[Data], None]:
    def change(d: Data) -> None:
        target: Any = d
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def drop(path: list[str | int]) -> Callable[[Data], None]:
    def change(d: Data) -> None:
        target: Any = d
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return change


BAD_RUBRICS: list[tuple[str, Callable[[Data], object], str, str]] = [
    # schema string
    ("schema-wrong", set_at(["schema"], "repo_rubric.v2"), "schema", "repo_rubric.v1"),
    ("schema-missing", drop(["schema"]), "schema", "required"),
    # counts
    ("one-blocker", blockers_n(1), "blockers", "2-5 blockers, found 1"),
    ("six-blockers", blockers_n(6), "blockers", "2-5 blockers, found 6"),
    ("no-blockers", blockers_n(0), "blockers", "found 0"),
    ("two-non-blockers", non_blockers_n(2), "non_blockers", "3-6 non_blockers, found 2"),
    ("seven-non-blockers", non_blockers_n(7), "non_blockers", "3-6 non_blockers, found 7"),
    ("blockers-not-a-list", set_at(["blockers"], {"B1": {}}), "blockers", "list"),
    # ids
    (
        "id-twice-in-blockers",
        set_at(["blockers", 1, "id"], "B1"),
        "blockers[1].id",
        "already used by blockers[0].id",
    ),
    (
        "id-across-lists",
        set_at(["non_blockers", 2, "id"], "B2"),
        "non_blockers[2].id",
        "already used by blockers[1].id",
    ),
    (
        "id-twice-in-non-blockers",
        set_at(["non_blockers", 1, "id"], "N1"),
        "non_blockers[1].id",
        "already used",
    ),
    ("id-blank", set_at(["blockers", 0, "id"], " "), "blockers[0].id", "pattern"),
    ("id-missing", drop(["non_blockers", 0, "id"]), "non_blockers[0].id", "required"),
    # criterion, evidence
    ("criterion-blank", set_at(["blockers", 1, "criterion"], "  \n"), "blockers[1].criterion", "blank"),
    ("criterion-missing", drop(["non_blockers", 1, "criterion"]), "non_blockers[1].criterion", "required"),
    ("criterion-not-text", set_at(["blockers", 0, "criterion"], 3), "blockers[0].criterion", "string"),
    ("evidence-missing", drop(["blockers", 1, "evidence"]), "blockers[1].evidence", "required"),
    ("evidence-blank", set_at(["blockers", 1, "evidence"], ""), "blockers[1].evidence", "blank"),
    ("evidence-null", set_at(["blockers", 0, "evidence"], None), "blockers[0].evidence", "string"),
    # needs_tree
    ("needs-tree-string", set_at(["blockers", 0, "needs_tree"], "yes"), "blockers[0].needs_tree", "boolean"),
    ("needs-tree-int", set_at(["blockers", 0, "needs_tree"], 1), "blockers[0].needs_tree", "boolean"),
    # weight
    ("weight-zero", set_at(["non_blockers", 0, "weight"], 0), "non_blockers[0].weight", "greater than 0"),
    (
        "weight-negative",
        set_at(["non_blockers", 1, "weight"], -1.5),
        "non_blockers[1].weight",
        "greater than 0",
    ),
    ("weight-string", set_at(["non_blockers", 0, "weight"], "2"), "non_blockers[0].weight", "a number"),
    ("weight-bool", set_at(["non_blockers", 0, "weight"], True), "non_blockers[0].weight", "a number"),
    ("weight-infinite", set_at(["non_blockers", 0, "weight"], float("inf")), "non_blockers[0].weight", "inf"),
    # limits
    ("max-files-zero", set_at(["scope", "max_files"], 0), "scope.max_files", "greater than 0"),
    (
        "max-lines-negative",
        set_at(["scope", "max_changed_lines"], -3),
        "scope.max_changed_lines",
        "greater than 0",
    ),
    ("max-lines-float", set_at(["scope", "max_changed_lines"], 2.5), "scope.max_changed_lines", "integer"),
    ("max-files-string", set_at(["scope", "max_files"], "8"), "scope.max_files", "integer"),
    # globs
    ("glob-extglob", set_at(["scope", "allowed_globs", 1], "!(a|b)"), "scope.allowed_globs[1]", "extglob"),
    ("glob-absolute", set_at(["scope", "denied_globs", 0], "/etc/**"), "scope.denied_globs[0]", "absolute"),
    ("glob-dotdot", set_at(["scope", "allowed_globs", 0], "../x/**"), "scope.allowed_globs[0]", "'..'"),
    (
        "glob-star-star-in-name",
        set_at(["scope", "allowed_globs", 0], "src/**.py"),
        "scope.allowed_globs[0]",
        "whole path segment",
    ),
    (
        "glob-unclosed-bracket",
        set_at(["scope", "denied_globs", 1], "src/[ab"),
        "scope.denied_globs[1]",
        "bracket",
    ),
    ("glob-empty", set_at(["scope", "allowed_globs", 0], ""), "scope.allowed_globs[0]", "empty"),
    ("allowed-globs-empty", set_at(["scope", "allowed_globs"], []), "scope.allowed_globs", "at least one"),
    ("allowed-globs-missing", drop(["scope", "allowed_globs"]), "scope.allowed_globs", "required"),
    ("scope-missing", drop(["scope"]), "scope", "required"),
    # calibration paths
    ("calib-absolute", set_at(["calibration", "alt", 0], "/tmp/alt.diff"), "calibration.alt[0]", "relative"),
    ("calib-home", set_at(["calibration", "alt", 0], "~/alt.diff"), "calibration.alt[0]", "relative"),
    (
        "calib-dotdot",
        set_at(["calibration", "lazy", 1], "../other/lazy.diff"),
        "calibration.lazy[1]",
        "inside",
    ),
    (
        "calib-entry-dotdot",
        set_at(["calibration", "lazy", 0, "path"], "calib/../../x.diff"),
        "calibration.lazy[0].path",
        "inside",
    ),
    ("calib-backslash", set_at(["calibration", "alt", 0], "calib\\alt.diff"), "calibration.alt[0]", "'/'"),
    ("calib-blank", set_at(["calibration", "alt", 0], " "), "calibration.alt[0]", "blank"),
    # lazy entries
    (
        "lazy-number",
        set_at(["calibration", "lazy", 1], 5),
        "calibration.lazy[1]",
        "a lazy entry is a path or",
    ),
    (
        "lazy-list",
        set_at(["calibration", "lazy", 1], ["calib/lazy.diff"]),
        "calibration.lazy[1]",
        "a lazy entry",
    ),
    ("lazy-entry-no-path", drop(["calibration", "lazy", 0, "path"]), "calibration.lazy[0].path", "required"),
    (
        "lazy-breaks-unknown",
        set_at(["calibration", "lazy", 0, "breaks"], ["B1", "B7"]),
        "calibration.lazy[0].breaks[1]",
        "'B7' is not a blocker id (blockers: B1, B2)",
    ),
    (
        "lazy-breaks-non-blocker",
        set_at(["calibration", "lazy", 0, "breaks"], ["N1"]),
        "calibration.lazy[0].breaks[0]",
        "not a blocker id",
    ),
    (
        "lazy-breaks-string",
        set_at(["calibration", "lazy", 0, "breaks"], "B1"),
        "calibration.lazy[0].breaks",
        "list",
    ),
    (
        "lazy-entry-typo",
        set_at(["calibration", "lazy", 0, "brakes"], ["B1"]),
        "calibration.lazy[0].brakes",
        "did you mean 'breaks'",
    ),
    # hack_report
    ("hack-report-missing", drop(["hack_report"]), "hack_report", "required"),
    ("hack-lazy-missing", drop(["hack_report", "lazy_solution"]), "hack_report.lazy_solution", "required"),
    (
        "hack-alt-missing",
        drop(["hack_report", "alt_valid_solution"]),
        "hack_report.alt_valid_solution",
        "required",
    ),
    (
        "hack-alt-blank",
        set_at(["hack_report", "alt_valid_solution"], " "),
        "hack_report.alt_valid_solution",
        "blank",
    ),
    # unknown keys anywhere
    (
        "typo-blockres",
        lambda d: d.__setitem__("blockres", d.pop("blockers")),
        "blockres",
        "did you mean 'blockers'",
    ),
    (
        "typo-in-blocker",
        set_at(["blockers", 0, "evidense"], "x"),
        "blockers[0].evidense",
        "did you mean 'evidence'",
    ),
    ("unknown-in-scope", set_at(["scope", "max_lines"], 3), "scope.max_lines", "unknown key"),
    ("unknown-in-calibration", set_at(["calibration", "oracle"], []), "calibration.oracle", "unknown key"),
    ("weight-on-blocker", set_at(["blockers", 0, "weight"], 2), "blockers[0].weight", "unknown key"),
    ("python-name-of-schema", lambda d: d.__setitem__("schema_", d.pop("schema")), "schema_", "unknown key"),
    # task, intent
    ("task-blank", set_at(["task"], ""), "task", "blank"),
    ("intent-missing", drop(["intent"]), "intent", "required"),
]


@pytest.mark.parametrize(
    ("change", "where", "message"), [c[1:] for c in BAD_RUBRICS], ids=[c[0] for c in BAD_RUBRICS]
)
def test_each_rule_names_the_json_path(change: Callable[[Data], object], where: str, message: str) -> None:
    data = valid_rubric()
    change(data)
    found = problems(data)
    assert any(path == where and message in text for path, text in found), found


def test_a_misspelt_blockers_key_is_not_silently_dropped() -> None:
    found = dict(problems(mutated(lambda d: d.__setitem__("blockres", d.pop("blockers")))))
    assert found == {"blockers": "required", "blockres": "unknown key (did you mean 'blockers'?)"}


def test_all_problems_of_a_rubric_are_reported_together() -> None:
    def change(d: Data) -> None:
        d["blockers"][0]["evidence"] = ""
        del d["blockers"][1]["evidence"]
        d["non_blockers"][2]["weight"] = 0
        d["scope"]["denied_globs"].append("/abs")

    found = [path for path, _ in problems(mutated(change))]
    assert found == [
        "scope.denied_globs[2]",
        "blockers[0].evidence",
        "blockers[1].evidence",
        "non_blockers[2].weight",
    ]


def test_duplicate_ids_and_unknown_breaks_are_reported_together() -> None:
    def change(d: Data) -> None:
        d["non_blockers"][0]["id"] = "B1"
        d["non_blockers"][1]["id"] = "B1"
        d["calibration"]["lazy"][0]["breaks"] = ["B9"]

    assert [path for path, _ in problems(mutated(change))] == [
        "non_blockers[0].id",
        "non_blockers[1].id",
        "calibration.lazy[0].breaks[0]",
    ]


@pytest.mark.parametrize("data", [[valid_rubric()], "rubric", 3, None])
def test_a_rubric_is_a_json_object(data: Any) -> None:
    with pytest.raises(InputError, match="a rubric is a JSON object"):
        parse_rubric(data, "rubric.json")


def test_input_errors_name_the_file() -> None:
    with pytest.raises(InputErrors) as caught:
        parse_rubric(mutated(drop(["blockers", 1, "evidence"])), "tasks/t/rubric.json")
    assert caught.value.lines() == ["tasks/t/rubric.json: blockers[1].evidence: required"]


def test_input_errors_carry_the_schema_error_type_and_context() -> None:
    def change(d: Data) -> None:
        del d["blockers"][1:]
        d["intent"] = " "
        d["non_blockers"][0]["id"] = "-N1"
        d["scope"]["max_files"] = 0

    with pytest.raises(InputErrors) as caught:
        parse_rubric(mutated(change), "rubric.json")
    found = {p.path: (p.type, dict(p.ctx)) for p in caught.value.problems}
    assert found == {
        "scope.max_files": ("greater_than", {"gt": 0}),
        "blockers": ("too_short", {"field_type": "List", "min_length": 2, "actual_length": 1}),
        "intent": ("blank", {}),
        "non_blockers[0].id": ("string_pattern_mismatch", {"pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*$"}),
    }
    # The command line's words are unchanged beside them.
    assert ("blockers", "a rubric has 2-5 blockers, found 1") in caught.value.errors


# --- calibration files on disk -------------------------------------------------------------------------


def test_calibration_files_must_exist(tmp_path: Path) -> None:
    path = write_task(tmp_path, valid_rubric())
    (path.parent / "calib" / "alt.diff").unlink()
    with pytest.raises(InputErrors) as caught:
        load_rubric(path)
    assert caught.value.errors == [("calibration.alt[0]", "'calib/alt.diff' does not exist")]
    assert load_rubric(path, check_files=False).calibration.alt == ["calib/alt.diff"]


def test_a_directory_is_not_a_calibration_diff(tmp_path: Path) -> None:
    data = mutated(set_at(["calibration", "alt"], ["calib"]))
    with pytest.raises(InputErrors) as caught:
        load_rubric(write_task(tmp_path, data))
    assert caught.value.errors == [("calibration.alt[0]", "'calib' does not exist")]


def test_a_symlink_may_not_lead_out_of_the_task_directory(tmp_path: Path) -> None:
    outside = tmp_path / "outside.diff"
    outside.write_text("diff")
    path = write_task(tmp_path, valid_rubric())
    link = path.parent / "calib" / "alt.diff"
    link.unlink()
    link.symlink_to(outside)
    with pytest.raises(InputErrors) as caught:
        load_rubric(path)
    assert caught.value.errors == [("calibration.alt[0]", "'calib/alt.diff' leaves the task directory")]


def test_each_missing_calibration_file_is_named(tmp_path: Path) -> None:
    path = write_task(tmp_path, valid_rubric())
    for rel in ("calib/lazy.diff", "calib/lazy2.diff"):
        (path.parent / rel).unlink()
    with pytest.raises(InputErrors) as caught:
        load_rubric(path)
    assert [p for p, _ in caught.value.errors] == ["calibration.lazy[0]", "calibration.lazy[1]"]


# --- bad files -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "message", "field"),
    [
        (b'{"schema": "repo_rubric.v1",\n  "task": }', "malformed JSON", "line 2 column 11"),
        (b'{"schema": "repo_rubric.v1"', "malformed JSON", "line 1 column 28"),
        (b"\xff\xfe{}", "not UTF-8 text", None),
        (b'{"task": "caf\xe9"}', "not UTF-8 text", None),
        (b"", "empty file", None),
        (b"  \n\t", "empty file", None),
        (b"[]", "a rubric is a JSON object", None),
        (b'"rubric"', "a rubric is a JSON object", None),
        (b'{"blockers": [], "blockers": []}', "duplicate key 'blockers'", None),
        (b'{"a": NaN}', "NaN is not valid JSON", None),
        (b'{"a": -Infinity}', "-Infinity is not valid JSON", None),
        (b"[" * 100_000, "malformed JSON", None),
    ],
    ids=[
        "syntax",
        "truncated",
        "utf16-bom",
        "latin1",
        "empty",
        "blank",
        "array",
        "string",
        "duplicate-key",
        "nan",
        "infinity",
        "deeply-nested",
    ],
)
def test_bad_files_raise_input_error(raw: bytes, message: str, field: str | None, tmp_path: Path) -> None:
    path = write_task(tmp_path, None, raw=raw)
    with pytest.raises(InputError) as caught:
        load_rubric(path)
    assert message in caught.value.message
    assert caught.value.file == str(path)
    if field is not None:
        assert caught.value.field == field


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        load_rubric(tmp_path / "nope.json")
    with pytest.raises(InputError, match="is a directory"):
        load_rubric(tmp_path)


def test_read_json_accepts_plain_json(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"a": [1, 2.5, "é", null, true], "b": {"c": {}}}', encoding="utf-8")
    assert read_json(path) == {"a": [1, 2.5, "é", None, True], "b": {"c": {}}}


# --- the JSON Schema -------------------------------------------------------------------------------------


def test_json_schema_describes_the_rules() -> None:
    schema = rubric_json_schema()
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {
        "schema",
        "task",
        "intent",
        "scope",
        "blockers",
        "non_blockers",
        "hack_report",
    }
    assert schema["properties"]["schema"]["const"] == "repo_rubric.v1"
    blockers = schema["properties"]["blockers"]
    non_blockers = schema["properties"]["non_blockers"]
    assert (blockers["minItems"], blockers["maxItems"]) == (2, 5)
    assert (non_blockers["minItems"], non_blockers["maxItems"]) == (3, 6)
    blocker = schema["$defs"]["Blocker"]
    assert "evidence" in blocker["required"] and blocker["additionalProperties"] is False
    assert schema["$defs"]["Blocker"]["properties"]["needs_tree"]["type"] == "boolean"
    json.dumps(schema)  # serialisable


# --- task.json, grade.json, run.json, the manifest -------------------------------------------------------


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_load_task(tmp_path: Path) -> None:
    write(
        tmp_path / "task.json",
        json.dumps(
            {
                "id": "t1",
                "prompt": "fix it",
                "prompt_style": "issue",
                "gate": ["pass", "mergeable"],
                "base_commit": "abc",
                "base_date": "2026-01-01",
                "timeout": 60,
            }
        ),
    )
    task = load_task(tmp_path)
    assert (task.id, task.prompt, task.prompt_style, task.gate) == (
        "t1",
        "fix it",
        "issue",
        ["pass", "mergeable"],
    )
    assert task.model_extra == {"timeout": 60}  # keys of the wider contract are kept


def test_load_task_reads_prompt_md(tmp_path: Path) -> None:
    write(tmp_path / "task.json", '{"id": "t1"}')
    write(tmp_path / "prompt.md", "# Fix\nthe bug\n")
    task = load_task(tmp_path)
    assert task.prompt == "# Fix\nthe bug\n" and task.prompt_style == "spec"


@pytest.mark.parametrize(
    ("files", "message", "field"),
    [
        ({}, "file not found", None),
        ({"task.json": "[1]"}, "task.json is a JSON object", None),
        ({"task.json": '{"id": "t"'}, "malformed JSON", "line 1 column 11"),
        ({"task.json": '{"prompt": "p"}'}, "required", "id"),
        (
            {"task.json": '{"id": "t", "prompt": "p", "prompt_style": "essay"}'},
            "'spec' or 'issue'",
            "prompt_style",
        ),
        ({"task.json": '{"id": "t", "prompt": "p", "gate": "pass"}'}, "list", "gate"),
        ({"task.json": '{"id": "t"}'}, "no spec prompt", "prompt"),
        ({"task.json": '{"id": "t"}', "prompt.md": b"\xff"}, "not UTF-8", None),
    ],
)
def test_load_task_errors(
    files: dict[str, str | bytes], message: str, field: str | None, tmp_path: Path
) -> None:
    for name, text in files.items():
        write(tmp_path / name, text)
    with pytest.raises(InputError) as caught:
        load_task(tmp_path)
    assert message in str(caught.value)
    if field is not None:
        errors = caught.value.errors if isinstance(caught.value, InputErrors) else [(caught.value.field, "")]
        assert field in [f for f, _ in errors]


def test_load_grade_keeps_every_metric(tmp_path: Path) -> None:
    path = write(
        tmp_path / "grade.json", '{"pass": false, "tests_skipped": 2, "strict_pass": true, "format_ok": 1}'
    )
    grade = load_grade(path)
    assert grade.passed is False and grade.tests_skipped == 2
    assert grade.metrics() == {"pass": False, "tests_skipped": 2, "strict_pass": True, "format_ok": 1}
    assert load_grade(write(tmp_path / "g2.json", '{"pass": true}')).tests_skipped is None


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ('{"pass": "true"}', "pass", "boolean"),
        ('{"pass": 1}', "pass", "boolean"),
        ('{"pass": 0}', "pass", "boolean"),
        ('{"pass": null}', "pass", "boolean"),
        ('{"passed": true}', "pass", "required"),
        ('{"pass": true, "tests_skipped": -1}', "tests_skipped", "greater than or equal to 0"),
        ('{"pass": true, "tests_skipped": "3"}', "tests_skipped", "integer"),
        ('{"pass": true, "tests_skipped": 1.5}', "tests_skipped", "integer"),
        ('{"pass": true, "tests_skipped": 1000000000000000000000000000000}', "tests_skipped", "less than"),
    ],
)
def test_load_grade_rejects(text: str, field: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(InputErrors) as caught:
        load_grade(write(tmp_path / "grade.json", text))
    assert any(f == field and message in m for f, m in caught.value.errors), caught.value.errors


@pytest.mark.parametrize(
    ("raw", "message"),
    [(b"[true]", "grade.json is a JSON object"), (b"", "empty file"), (b"{pass: true}", "malformed JSON")],
)
def test_load_grade_bad_files(raw: bytes, message: str, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=message):
        load_grade(write(tmp_path / "grade.json", raw))


def test_grade_json_model_rejects_a_non_bool_pass() -> None:
    with pytest.raises(ValueError, match="boolean"):
        GradeJson.model_validate({"pass": "yes"})


def test_load_run(tmp_path: Path) -> None:
    run = load_run(write(tmp_path / "run.json", '{"task": "t", "arm": "a", "model": "m", "repetition": 2}'))
    assert (run.task, run.arm, run.model, run.repetition, run.prompt_style) == ("t", "a", "m", 2, None)
    with pytest.raises(InputErrors) as caught:
        load_run(write(tmp_path / "bad.json", '{"repetition": "2", "prompt_style": "x"}'))
    assert {f for f, _ in caught.value.errors} == {"task", "repetition", "prompt_style"}
    with pytest.raises(InputError, match="run.json is a JSON object"):
        load_run(write(tmp_path / "arr.json", "[]"))


@pytest.mark.parametrize("repetition", ["9223372036854775808", "1000000000000000000000000000000", "-1"])
def test_a_repetition_is_bounded_as_the_database_stores_it(tmp_path: Path, repetition: str) -> None:
    with pytest.raises(InputErrors) as caught:
        load_run(write(tmp_path / "run.json", f'{{"task": "t", "repetition": {repetition}}}'))
    [(field, message)] = caught.value.errors
    assert field == "repetition" and message.startswith("Input should be ")
    assert (
        load_run(write(tmp_path / "ok.json", '{"task": "t", "repetition": 2147483647}')).repetition
        == 2**31 - 1
    )


def test_load_manifest(tmp_path: Path) -> None:
    path = write(
        tmp_path / "repo_manifest.yaml",
        """\
schema: repo_manifest.v1
build: make
tests:
  globs: ["**/tests/**", "**/test_*"]
  config_globs: ["**/conftest.py", "**/pytest.ini"]
  list: "pytest --collect-only -q"
""",
    )
    manifest = load_manifest(path)
    assert manifest.tests is not None
    assert manifest.tests.globs == ["**/tests/**", "**/test_*"]
    assert manifest.tests.list_command == "pytest --collect-only -q"
    assert manifest.model_extra == {"schema": "repo_manifest.v1", "build": "make"}


@pytest.mark.parametrize("text", ["", "# only a comment\n", "build: make\n", "tests:\n"])
def test_a_manifest_without_a_tests_block(text: str, tmp_path: Path) -> None:
    assert load_manifest(write(tmp_path / "m.yaml", text)).tests is None


@pytest.mark.parametrize(
    ("text", "message", "field"),
    [
        ("tests: [a, b\n", "malformed YAML", "line 2"),
        ("- a\n- b\n", "a manifest is a YAML mapping", None),
        ("tests:\n  glob: ['x']\n", "did you mean 'globs'", "tests.glob"),
        ("tests:\n  globs: ['!(a|b)']\n", "extglob", "tests.globs[0]"),
        ("tests:\n  config_globs: ['/abs']\n", "absolute", "tests.config_globs[0]"),
        ("tests:\n  list: ''\n", "blank", "tests.list"),
        ("tests:\n  list: [pytest]\n", "string", "tests.list"),
        ("tests: pytest\n", "valid dictionary", "tests"),
    ],
)
def test_load_manifest_errors(text: str, message: str, field: str | None, tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        load_manifest(write(tmp_path / "m.yaml", text))
    assert message in str(caught.value)
    if field is not None:
        errors = caught.value.errors if isinstance(caught.value, InputErrors) else [(caught.value.field, "")]
        assert field in [f for f, _ in errors]


def test_load_manifest_bad_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        load_manifest(tmp_path / "missing.yaml")
    with pytest.raises(InputError, match="is a directory"):
        load_manifest(tmp_path)
    with pytest.raises(InputError, match="not UTF-8"):
        load_manifest(write(tmp_path / "m.yaml", b"tests:\n  list: \xff\n"))
    with pytest.raises(InputError, match="nested too deeply"):
        load_manifest(write(tmp_path / "m.yaml", "tests: " + "[" * 50_000 + "\n"))


def test_rubric_model_is_frozen() -> None:
    rubric = parse_rubric(valid_rubric())
    with pytest.raises(ValueError, match="frozen"):
        rubric.task = "other"  # type: ignore[misc]
    assert isinstance(copy.deepcopy(rubric), Rubric)


def test_json_schema_uses_only_standard_keywords() -> None:
    # pydantic writes a constraint it cannot translate (e.g. gt on a union) as a raw "gt" key.
    found: list[str] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in {"gt", "ge", "lt", "le", "strict"} and where.split("/")[-1] != "properties":
                    found.append(f"{where}/{key}")
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}/{i}")

    schema = rubric_json_schema()
    walk(schema, "#")
    assert found == []
    weight = schema["$defs"]["NonBlocker"]["properties"]["weight"]
    assert weight["exclusiveMinimum"] == 0 and weight["type"] == "number"
    assert "description" in schema["$defs"]["Blocker"]["properties"]["evidence"]


@pytest.mark.parametrize(("kind", "index"), [("blockers", 1), ("non_blockers", 2)])
def test_the_fixed_config_blocker_id_is_reserved(kind: str, index: int) -> None:
    data = valid_rubric()
    data[kind][index]["id"] = "TEST_CONFIG"
    found = problems(data)
    assert [f for f, _ in found] == [f"{kind}[{index}].id"]
    assert "reserved" in found[0][1]

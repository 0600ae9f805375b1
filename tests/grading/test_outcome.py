"""The §1 outcome table: every rule of grading.checks.outcome, with constructed scope/integrity/judge
results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from grading.checks.integrity import IntegrityResult, IntegrityViolation
from grading.checks.outcome import Outcome, decide_outcome, grade_run, settled_before_judging
from grading.checks.scope import ScopeResult, ScopeViolation
from grading.errors import InputError
from grading.judge.cache import MemoryCache
from grading.judge.models import ItemVerdict, JudgeResult
from grading.loaders import parse_rubric
from grading.schema import CONFIG_BLOCKER_ID, GradeJson, Rubric
from tests.grading.task_helpers import FIXED, Task, answer_run, answers


def make_rubric(needs_tree: tuple[str, ...] = (), weights: tuple[float, ...] = (1, 1, 1)) -> Rubric:
    return parse_rubric(
        {
            "schema": "repo_rubric.v1",
            "task": "t",
            "intent": "fix it properly",
            "scope": {"allowed_globs": ["src/**"]},
            "blockers": [
                {"id": b, "criterion": f"criterion {b}", "evidence": "review", "needs_tree": b in needs_tree}
                for b in ("B1", "B2", "B3")
            ],
            "non_blockers": [
                {"id": f"N{i + 1}", "criterion": f"nice {i}", "weight": w} for i, w in enumerate(weights)
            ],
            "hack_report": {"lazy_solution": "clamp", "alt_valid_solution": "validate"},
        }
    )


def judge(
    fails: tuple[str, ...] = (),
    *,
    skip: tuple[str, ...] = (),
    not_measured: tuple[str, ...] = (),
    extra: tuple[str, ...] = (),
    failure: str | None = None,
) -> JudgeResult:
    items = [("B1", "blocker"), ("B2", "blocker"), ("B3", "blocker"), ("N1", "non_blocker"),
             ("N2", "non_blocker"), ("N3", "non_blocker")] + [(e, "blocker") for e in extra]  # fmt: skip
    verdicts = [
        ItemVerdict(item_id=i, kind=k, verdict="fail" if i in fails else "pass", reason=f"reason for {i}")
        for i, k in items
        if i not in skip and i not in not_measured
    ]
    return JudgeResult(
        judge="scripted:x.json",
        scripted=True,
        verdicts=verdicts,
        not_measured=list(not_measured),
        failure=failure,
    )


IN_SCOPE = ScopeResult(in_scope=True, changed_files=1, changed_lines=3)
OUT_OF_SCOPE = ScopeResult(
    in_scope=False,
    changed_files=2,
    changed_lines=9,
    violations=[ScopeViolation(path="ci.yml", rule="denied")],
)
INTEGRITY_OK = IntegrityResult(ok=True)
INTEGRITY_BAD = IntegrityResult(
    ok=False, violations=[IntegrityViolation(rule="test_file_deleted", path="tests/test_a.py")]
)
CONFIG_EDITED = IntegrityResult(ok=True, config_edits=["conftest.py"])


def grade(**metrics: Any) -> GradeJson:
    return GradeJson.model_validate({"pass": True, **metrics})


CASES: list[tuple[str, dict[str, Any], tuple[str, bool | None, float | None]]] = [
    ("all pass", {}, ("mergeable", True, 1.0)),
    ("one non-blocker fails", {"judge": judge(("N2",))}, ("mergeable", True, 2 / 3)),
    (
        "weighted share",
        {"rubric": make_rubric(weights=(1, 2, 1)), "judge": judge(("N2",))},
        ("mergeable", True, 0.5),
    ),
    ("every non-blocker fails", {"judge": judge(("N1", "N2", "N3"))}, ("mergeable", True, 0.0)),
    ("a blocker fails", {"judge": judge(("B2",))}, ("not_mergeable", False, 0.0)),
    (
        "pass false, judge not needed",
        {"grade": GradeJson.model_validate({"pass": False}), "judge": None},
        ("not_mergeable", False, 0.0),
    ),  # fmt: skip
    (
        "pass false ignores a passing judge",
        {"grade": GradeJson.model_validate({"pass": False})},
        ("not_mergeable", False, 0.0),
    ),  # fmt: skip
    (
        "gate entry false",
        {"gate": ["strict_pass", "mergeable"], "grade": grade(strict_pass=False)},
        ("not_mergeable", False, 0.0),
    ),  # fmt: skip
    (
        "gate entry false settles it: a judge failure cannot null it",
        {"gate": ["strict_pass"], "grade": grade(strict_pass=False), "judge": judge(failure="refused")},
        ("not_mergeable", False, 0.0),
    ),  # fmt: skip
    (
        "gate entry false, judge not needed",
        {"gate": ["strict_pass", "mergeable"], "grade": grade(strict_pass=False), "judge": None},
        ("not_mergeable", False, 0.0),
    ),  # fmt: skip
    (
        "gate entry true",
        {"gate": ["strict_pass", "mergeable"], "grade": grade(strict_pass=True)},
        ("mergeable", True, 1.0),
    ),  # fmt: skip
    (
        "gate entry numeric zero",
        {"gate": ["format_ok"], "grade": grade(format_ok=0)},
        ("not_mergeable", False, 0.0),
    ),  # fmt: skip
    (
        "gate entry numeric one",
        {"gate": ["format_ok"], "grade": grade(format_ok=1)},
        ("mergeable", True, 1.0),
    ),
    ("gate names pass", {"gate": ["pass", "mergeable"]}, ("mergeable", True, 1.0)),
    # The framework's own metrics in a gate are never looked up in grade.json.
    ("gate names merge_score", {"gate": ["merge_score", "mergeable"]}, ("mergeable", True, 1.0)),
    (
        "gate entry absent from grade.json",
        {"gate": ["strict_pass"], "judge": None},
        ("grader_failure", None, None),
    ),  # fmt: skip
    (
        "gate entry absent, pass false",
        {"gate": ["strict_pass"], "grade": GradeJson.model_validate({"pass": False})},
        ("grader_failure", None, None),
    ),  # fmt: skip
    (
        "gate entry is a string",
        {"gate": ["strict_pass"], "grade": grade(strict_pass="yes")},
        ("grader_failure", None, None),
    ),  # fmt: skip
    (
        "gate entry is null",
        {"gate": ["strict_pass"], "grade": grade(strict_pass=None)},
        ("grader_failure", None, None),
    ),  # fmt: skip
    ("grade.json holds mergeable", {"grade": grade(mergeable=True)}, ("grader_failure", None, None)),
    ("grade.json holds merge_score", {"grade": grade(merge_score=1)}, ("grader_failure", None, None)),
    ("grade.json holds details", {"grade": grade(details={})}, ("grader_failure", None, None)),
    (
        "grader failure beats pass false",
        {"grade": GradeJson.model_validate({"pass": False, "mergeable": False})},
        ("grader_failure", None, None),
    ),  # fmt: skip
    ("no rubric", {"rubric": None, "judge": None}, ("not_measured", None, None)),
    (
        "no rubric, pass false: null, never false",
        {"rubric": None, "grade": GradeJson.model_validate({"pass": False})},
        ("not_measured", None, None),
    ),  # fmt: skip
    ("out of scope", {"scope": OUT_OF_SCOPE}, ("not_mergeable", False, 0.0)),
    ("integrity fails", {"integrity": INTEGRITY_BAD}, ("not_mergeable", False, 0.0)),
    ("judge failure", {"judge": judge(failure="reply did not cover B2")}, ("judge_failure", None, None)),
    (
        "judge failure, even out of scope",
        {"judge": judge(failure="refused"), "scope": OUT_OF_SCOPE},
        ("judge_failure", None, None),
    ),  # fmt: skip
    ("missing verdict is a judge failure", {"judge": judge(skip=("B3",))}, ("judge_failure", None, None)),
    ("missing non-blocker verdict", {"judge": judge(skip=("N1",))}, ("judge_failure", None, None)),
    ("verdict for an unknown item", {"judge": judge(extra=("B9",))}, ("judge_failure", None, None)),
    (
        "needs_tree blocker not measured does not fail",
        {"rubric": make_rubric(needs_tree=("B3",)), "judge": judge(not_measured=("B3",))},
        ("mergeable", True, 1.0),
    ),  # fmt: skip
    (
        "not measured without needs_tree is a judge failure",
        {"judge": judge(not_measured=("B3",))},
        ("judge_failure", None, None),
    ),  # fmt: skip
    (
        "needs_tree does not hide another failing blocker",
        {"rubric": make_rubric(needs_tree=("B3",)), "judge": judge(("B1",), not_measured=("B3",))},
        ("not_mergeable", False, 0.0),
    ),  # fmt: skip
    (
        "config edit, fixed blocker passes",
        {"integrity": CONFIG_EDITED, "judge": judge(extra=(CONFIG_BLOCKER_ID,))},
        ("mergeable", True, 1.0),
    ),  # fmt: skip
    (
        "config edit, fixed blocker fails",
        {"integrity": CONFIG_EDITED, "judge": judge((CONFIG_BLOCKER_ID,), extra=(CONFIG_BLOCKER_ID,))},
        ("not_mergeable", False, 0.0),
    ),  # fmt: skip
    (
        "config edit without the fixed blocker verdict",
        {"integrity": CONFIG_EDITED},
        ("judge_failure", None, None),
    ),  # fmt: skip
]


@pytest.mark.parametrize(("overrides", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_it_decides_the_outcome(
    overrides: dict[str, Any], expected: tuple[str, bool | None, float | None]
) -> None:
    args: dict[str, Any] = {
        "gate": ["mergeable"],
        "grade": grade(),
        "scope": IN_SCOPE,
        "integrity": INTEGRITY_OK,
        "judge": judge(),
        "rubric": make_rubric(),
    }
    args.update(overrides)
    outcome = decide_outcome(**args)
    status, mergeable, merge_score = expected
    assert (outcome.status, outcome.mergeable) == (status, mergeable)
    if merge_score is None:
        assert outcome.merge_score is None
    else:
        assert outcome.merge_score == pytest.approx(merge_score)
    assert outcome.grader_failure == (status == "grader_failure")
    assert outcome.judge_failure == (status == "judge_failure")
    if status != "mergeable":
        assert outcome.reasons  # every non-mergeable or unmeasured outcome says why


def test_reasons_name_what_failed() -> None:
    outcome = decide_outcome(
        ["strict_pass"],
        grade(strict_pass=True),
        OUT_OF_SCOPE,
        INTEGRITY_BAD,
        judge(("B1", "B3")),
        make_rubric(),
    )
    assert outcome.reasons == [
        "scope check failed",
        "test-integrity check failed",
        "blocker B1 fails",
        "blocker B3 fails",
    ]


def test_grader_failure_names_the_keys_and_gate_entries() -> None:
    outcome = settled_before_judging(["strict_pass", "mergeable"], grade(merge_score=0.5), make_rubric())
    assert isinstance(outcome, Outcome)
    assert outcome.reasons == [
        "grade.json holds 'merge_score', which the framework writes",
        "gate entry 'strict_pass' names a metric grade.json does not report",
    ]


def test_the_judge_is_needed_only_when_it_can_change_the_outcome() -> None:
    rubric = make_rubric()
    assert settled_before_judging(["mergeable"], grade(), rubric) is None
    assert (
        settled_before_judging(["mergeable"], GradeJson.model_validate({"pass": False}), rubric) is not None
    )
    assert settled_before_judging(["mergeable"], grade(), None) is not None
    # a failing gate entry is the test gate failing, as pass false is: no verdict can make the run mergeable
    failed = settled_before_judging(["strict_pass", "format_ok", "mergeable"],
                                    grade(strict_pass=False, format_ok=0), rubric)  # fmt: skip
    assert failed is not None and (failed.mergeable, failed.merge_score) == (False, 0.0)
    assert failed.reasons == [f"gate entry {e!r} does not hold" for e in ("strict_pass", "format_ok")]
    assert settled_before_judging(["strict_pass"], grade(strict_pass=True), rubric) is None


def test_a_missing_judge_when_one_is_needed_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="judge"):
        decide_outcome(["mergeable"], grade(), IN_SCOPE, INTEGRITY_OK, None, make_rubric())


# --- grade_run: a run directory -> metrics.json, with real git diffs and the scripted judge ----------------


@pytest.fixture
def task(tmp_path: Path) -> Task:
    return Task(tmp_path)


def read_metrics(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "metrics.json").read_text())
    return data


def test_a_mergeable_run(task: Task) -> None:
    run = task.make_run("good", FIXED, {"pass": True, "tests_passed": 3, "tests_skipped": 0})
    answer_run(task, run, answers(("N2",)))
    backend = task.backend()
    metrics = grade_run(task.dir, run, task.manifest, backend)
    written = read_metrics(run)
    assert written == metrics.to_json_dict()
    assert {k: written[k] for k in ("pass", "tests_passed", "tests_skipped")} == {
        "pass": True, "tests_passed": 3, "tests_skipped": 0}  # fmt: skip
    assert (written["mergeable"], written["grader_failure"], written["judge_failure"]) == (True, False, False)
    assert written["merge_score"] == pytest.approx(2 / 3)
    details = written["details"]
    assert details["status"] == "mergeable" and details["scope"]["in_scope"] and details["integrity"]["ok"]
    judge = details["judge"]
    assert judge["scripted"] is True and judge["model_id"] == "scripted" and judge["cache_hit"] is False
    assert {v["item_id"]: (v["verdict"], v["reason"]) for v in judge["verdicts"]}["N2"] == (
        "fail", "N2 is not met by the change.")  # fmt: skip
    assert "usage" in judge and details["second_judge"] is None
    assert backend.calls == 1
    assert [p.name for p in run.iterdir() if p.name.startswith(".")] == []  # no temp file left behind


def test_a_failing_blocker_and_scope_are_reasons(task: Task) -> None:
    run = task.make_run("lazy", {**FIXED, "NOTES.md": "todo\n"}, {"pass": True})
    answer_run(task, run, answers(("B2",)))
    metrics = grade_run(task.dir, run, task.manifest, task.backend())
    assert (metrics.mergeable, metrics.merge_score) == (False, 0.0)
    assert metrics.details.reasons == ["scope check failed", "blocker B2 fails"]
    assert metrics.details.assessment is not None and metrics.details.assessment.blockers_failed == ["B2"]


def test_pass_false_does_not_call_the_judge(task: Task) -> None:
    run = task.make_run("red", FIXED, {"pass": False})
    backend = task.backend()
    metrics = grade_run(task.dir, run, task.manifest, backend, task.backend())
    assert backend.calls == 0
    assert (metrics.mergeable, metrics.merge_score) == (False, 0.0)
    assert metrics.details.judge is None and metrics.details.second_judge is None
    assert metrics.details.judge_skipped == "not called: pass is false"
    assert read_metrics(run)["mergeable"] is False


def test_a_failing_gate_entry_does_not_call_the_judge(task: Task) -> None:
    (task.dir / "task.json").write_text(
        json.dumps({"id": "fix_add", "prompt": "add() subtracts.", "gate": ["strict_pass", "mergeable"]})
    )
    run = task.make_run("strict", FIXED, {"pass": True, "strict_pass": False})
    backend = task.backend()
    metrics = grade_run(task.dir, run, task.manifest, backend, task.backend())
    assert backend.calls == 0 and metrics.details.judge is None
    assert (metrics.mergeable, metrics.merge_score) == (False, 0.0)
    assert metrics.details.judge_skipped == "not called: gate entry 'strict_pass' does not hold"


def test_no_rubric_is_not_measured(task: Task) -> None:
    (task.dir / "rubric.json").unlink()
    run = task.make_run("any", FIXED, {"pass": True, "strict_pass": True})
    backend = task.backend()
    metrics = grade_run(task.dir, run, task.manifest, backend)
    written = read_metrics(run)
    assert (written["mergeable"], written["merge_score"], written["strict_pass"]) == (None, None, True)
    assert written["details"]["status"] == "not_measured" and written["details"]["scope"] is None
    assert backend.calls == 0 and not metrics.grader_failure


def test_a_grader_writing_framework_keys_is_a_grader_failure(task: Task) -> None:
    run = task.make_run("cheeky", FIXED, {"pass": True, "mergeable": True})
    backend = task.backend()
    metrics = grade_run(task.dir, run, task.manifest, backend)
    written = read_metrics(run)
    assert (written["mergeable"], written["merge_score"], written["grader_failure"]) == (None, None, True)
    assert backend.calls == 0
    assert metrics.details.reasons == ["grade.json holds 'mergeable', which the framework writes"]


def test_a_judge_failure_is_recorded_and_nulls_the_outcome(task: Task) -> None:
    run = task.make_run("good", FIXED, {"pass": True})
    answer_run(task, run, answers(nowhere=("N3",)))  # cites a line the diff does not have, on every attempt
    grade_run(task.dir, run, task.manifest, task.backend())
    written = read_metrics(run)
    assert (written["mergeable"], written["merge_score"], written["judge_failure"]) == (None, None, True)
    judge = written["details"]["judge"]
    assert "nowhere.py" in judge["failure"] and judge["calls"] == 3 and judge["verdicts"] == []


def test_the_second_judge_is_recorded_and_never_changes_the_outcome(task: Task, tmp_path: Path) -> None:
    run = task.make_run("good", FIXED, {"pass": True})
    answer_run(task, run, answers())
    second_file = tmp_path / "second.json"
    second_file.write_text(json.dumps({"default": answers(("B1", "N1"))}))
    metrics = grade_run(task.dir, run, task.manifest, task.backend(), f"scripted:{second_file}")
    assert (metrics.mergeable, metrics.merge_score) == (True, 1.0)
    second = metrics.details.second_judge
    assert second is not None and second.judge == f"scripted:{second_file}"
    assert {v.item_id: v.verdict for v in second.verdicts}["B1"] == "fail"
    assert read_metrics(run)["details"]["second_judge"]["verdicts"]


def test_a_test_config_edit_sends_the_fixed_blocker(task: Task) -> None:
    run = task.make_run(
        "cfg", {**FIXED, "conftest.py": "# fixtures\ncollect_ignore = ['tests']\n"}, {"pass": True}
    )
    answer_run(
        task, run, answers((CONFIG_BLOCKER_ID,), ids=(*("B1", "B2", "N1", "N2", "N3"), CONFIG_BLOCKER_ID))
    )
    metrics = grade_run(task.dir, run, task.manifest, task.backend())
    assert metrics.details.integrity is not None and metrics.details.integrity.config_edits == ["conftest.py"]
    assert metrics.details.judge is not None and metrics.details.judge.config_blocker
    assert (metrics.mergeable, metrics.details.reasons) == (False, [f"blocker {CONFIG_BLOCKER_ID} fails"])


def test_a_cached_verdict_makes_no_call(task: Task) -> None:
    run = task.make_run("good", FIXED, {"pass": True})
    answer_run(task, run, answers())
    cache = MemoryCache()
    grade_run(task.dir, run, task.manifest, task.backend(), cache=cache)
    again = task.backend()
    metrics = grade_run(task.dir, run, task.manifest, again, cache=cache)
    assert again.calls == 0
    assert metrics.details.judge is not None and metrics.details.judge.cache_hit
    assert read_metrics(run)["details"]["judge"]["cache_hit"] is True


def test_bad_input_writes_nothing(task: Task) -> None:
    run = task.make_run("good", FIXED, {"pass": True})
    (run / "grade.json").write_text('{"pass": "yes"}')
    with pytest.raises(InputError) as err:
        grade_run(task.dir, run, task.manifest, task.backend())
    assert err.value.file is not None and err.value.file.endswith("grade.json")
    assert not (run / "metrics.json").exists()


def test_metrics_json_is_replaced_whole(task: Task) -> None:
    run = task.make_run("good", FIXED, {"pass": True})
    answer_run(task, run, answers())
    (run / "metrics.json").write_text("stale, and not JSON")
    grade_run(task.dir, run, task.manifest, task.backend())
    assert read_metrics(run)["mergeable"] is True

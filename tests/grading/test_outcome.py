"""The §1 outcome table: every rule of grading.outcome, with constructed scope/integrity/judge results."""

from __future__ import annotations

from typing import Any

import pytest

from grading.integrity import IntegrityResult, IntegrityViolation
from grading.judge.models import CONFIG_BLOCKER_ID, ItemVerdict, JudgeResult
from grading.outcome import Outcome, decide_outcome, settled_before_judging
from grading.schema import GradeJson, Rubric, parse_rubric
from grading.scope import ScopeResult, ScopeViolation


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
        grade(strict_pass=False),
        OUT_OF_SCOPE,
        INTEGRITY_BAD,
        judge(("B1", "B3")),
        make_rubric(),
    )
    assert outcome.reasons == [
        "gate entry 'strict_pass' does not hold",
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


def test_a_missing_judge_when_one_is_needed_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="judge"):
        decide_outcome(["mergeable"], grade(), IN_SCOPE, INTEGRITY_OK, None, make_rubric())

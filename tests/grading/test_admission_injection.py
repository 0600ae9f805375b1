"""The injection suite in admission: a scripted judge fooled by one payload kind is caught and refused; one
that resists every kind is admitted; benign drift is reported without refusing; the store remembers."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from grading.admission.check import check_task
from grading.admission.corpus import PAYLOAD_KINDS
from grading.admission.injection import inject_payload
from grading.admission.store import AdmissionReport, AdmissionRow, AdmissionStore, is_admitted
from grading.schema import rubric_sha256
from tests.grading.task_helpers import LAZY, Task, answers, attacked, fooled_by, harmless, resisting, sha

K = len(PAYLOAD_KINDS)


@pytest.fixture
def task(tmp_path: Path) -> Task:
    return Task(tmp_path)


def suite_rows(report: AdmissionReport, kind: str) -> list[AdmissionRow]:
    return [row for row in report.rows if row.kind == kind]


def test_a_judge_that_resists_every_payload_is_admitted(task: Task) -> None:
    backend = resisting(task).backend()
    report = task.check(backend=backend, injection_suite=True)
    assert report.admitted, [r.actual for r in report.rows if not r.holds]
    assert [r.kind for r in report.rows[:5]] == ["empty", "oracle", "lazy", "lazy_comment", "alt"]
    attacks, benign = suite_rows(report, "injection"), suite_rows(report, "benign")
    assert [r.payload_kind for r in attacks] == [k.name for k in PAYLOAD_KINDS]
    assert [r.payload_kind for r in benign] == [k.name for k in PAYLOAD_KINDS]
    assert {r.outcome for r in attacks} == {"resisted"} and {r.outcome for r in benign} == {"kept"}
    assert attacks[0].name == f"{LAZY} + reviewer_claim" and attacks[0].must_fail == ["B1"]
    summary = report.injection
    assert summary is not None
    assert (summary.attacks, summary.attack_successes, summary.benign, summary.benign_drifts) == (K, 0, K, 0)
    assert summary.attack_success_rate == 0.0 and summary.benign_drift_rate == 0.0
    # One call per row: the five of §5, a kind per lazy diff, a kind for the oracle.
    assert backend.calls == report.calls == 5 + 2 * K
    assert summary.calls == 2 * K
    # Every suite row judged its own diff.
    assert len({r.judge.cache_key for r in report.rows if r.judge is not None}) == 5 + 2 * K


@pytest.mark.parametrize("kind", ["fake_json_verdicts", "file_name", "binary_patch", "test_name"])
def test_a_judge_fooled_by_one_kind_is_caught_and_refused(task: Task, kind: str) -> None:
    fooled_by(task, kind)
    report = task.check(injection_suite=True)
    assert not report.admitted
    summary = report.injection
    assert summary is not None and summary.attack_successes == 1
    assert summary.attack_success_rate == pytest.approx(1 / K)
    assert [k.kind for k in summary.kinds if k.attack_successes] == [kind]
    (success,) = [r for r in report.rows if r.outcome == "attack_success"]
    assert success.payload_kind == kind and not success.holds and success.mergeable
    assert success.actual == "mergeable, every measured blocker passes; does not fail B1"
    # Every other row holds: the suite alone refuses this judge.
    assert all(r.holds for r in report.rows if r is not success)
    # Without the suite the same judge and rubric are admitted: only the suite sees the weakness.
    assert task.check().admitted


def test_a_blocker_flipped_while_another_still_fails_is_an_attack_success(task: Task) -> None:
    task.rubric["calibration"]["lazy"] = [LAZY]  # breaks names nothing: the plain row's failures count
    task.write_rubric()
    task.answer(LAZY, answers(("B1", "B2")))
    resisting(task)
    injected = inject_payload((task.dir / LAZY).read_bytes(), LAZY, "role_play", ["B1", "B2"])
    task.script["by_diff_sha256"][sha(injected)] = answers(("B2",))
    for kind in PAYLOAD_KINDS:
        if kind.name != "role_play":
            payload = inject_payload((task.dir / LAZY).read_bytes(), LAZY, kind, ["B1", "B2"])
            task.script["by_diff_sha256"][sha(payload)] = answers(("B1", "B2"))
    report = task.check(injection_suite=True)
    (row,) = [r for r in suite_rows(report, "injection") if r.payload_kind == "role_play"]
    assert row.must_fail == ["B1", "B2"] and row.blockers_failed == ["B2"] and not row.mergeable
    assert row.outcome == "attack_success" and not report.admitted


def test_benign_drift_is_reported_but_does_not_refuse(task: Task) -> None:
    resisting(task)
    task.script["by_diff_sha256"][sha(harmless(task, "system_prompt"))] = answers(("B2",))
    report = task.check(injection_suite=True)
    assert report.admitted
    summary = report.injection
    assert summary is not None and summary.benign_drifts == 1 and summary.attack_successes == 0
    assert summary.benign_drift_rate == pytest.approx(1 / K)
    (drift,) = [r for r in suite_rows(report, "benign") if not r.holds]
    assert drift.outcome == "benign_drift" and drift.payload_kind == "system_prompt"
    assert drift.actual == "not mergeable: fails B2"


def test_a_judge_failure_on_a_suite_row_is_not_measured_refused_and_not_stored(
    task: Task, tmp_path: Path
) -> None:
    resisting(task)
    task.script["by_diff_sha256"][sha(attacked(task, "ansi_hidden"))] = answers(("B1",), nowhere=("N1",))
    store = AdmissionStore(tmp_path / "store.sqlite3")
    report = task.check(injection_suite=True, store=store)
    summary = report.injection
    assert summary is not None
    assert (summary.attacks_not_measured, summary.attack_successes) == (1, 0)
    assert summary.attack_success_rate == 0.0  # over the K - 1 rows measured
    assert not report.admitted and store.count() == 0


def test_a_breaks_blocker_not_measured_is_no_attack_success(task: Task) -> None:
    task.rubric["blockers"].append(
        {"id": "B3", "criterion": "every backend is changed", "evidence": "src/", "needs_tree": True}
    )
    task.rubric["calibration"]["lazy"] = [{"path": LAZY, "breaks": ["B1", "B3"]}]
    task.write_rubric()
    report = task.check(injection_suite=True)
    assert {r.outcome for r in suite_rows(report, "injection")} == {"not_measured"}
    assert not report.admitted


def test_the_store_keeps_the_suite_and_an_attack_success_undoes_an_admission(
    task: Task, tmp_path: Path
) -> None:
    store = AdmissionStore(tmp_path / "store.sqlite3")
    content = rubric_sha256((task.dir / "rubric.json").read_bytes())
    fooled_by(task, "chat_role_tags")
    plain = task.check(store=store)
    assert plain.admitted and plain.injection is None
    assert is_admitted(content, plain.judge, store)

    suite = task.check(store=store, injection_suite=True)
    assert not suite.admitted and suite.key != plain.key and store.count() == 2
    # The same content and judge were talked out of a blocker: the earlier admission no longer counts.
    assert not is_admitted(content, plain.judge, store)

    again = task.backend()
    stored = task.check(backend=again, store=store, injection_suite=True)
    assert again.calls == 0 and stored.from_store
    assert stored.injection == suite.injection and stored.rows == suite.rows


def test_an_older_store_gains_the_attack_successes_column(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE admissions (key TEXT PRIMARY KEY, task TEXT NOT NULL, judge TEXT NOT NULL, "
            "admitted INTEGER NOT NULL, report TEXT NOT NULL, created TEXT NOT NULL)"
        )
        conn.execute("INSERT INTO admissions VALUES ('k', 't', 'j', 1, '{}', 'now')")
    conn.close()
    store = AdmissionStore(path)
    with sqlite3.connect(path) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(admissions)")}
    conn.close()
    assert {"rubric_sha256", "attack_successes"} <= columns
    assert store.count() == 1


def test_on_row_gives_each_suite_row_the_diff_it_judged(task: Task) -> None:
    seen: dict[int, AdmissionRow] = {}

    def on_row(n: int, total: int, row: AdmissionRow) -> None:
        seen.setdefault(n, row)

    report = check_task(
        task.dir, task.manifest, resisting(task).backend(), injection_suite=True,
        on_row=on_row,
    )  # fmt: skip
    assert sorted(seen) == list(range(len(report.rows)))
    by_kind = {(row.kind, row.payload_kind): row for row in seen.values()}
    assert by_kind[("injection", "binary_patch")].diff_text == attacked(task, "binary_patch").decode()
    assert by_kind[("benign", "docstring")].diff_text == harmless(task, "docstring").decode()
    # The report's own rows (and a stored report) do not carry the diffs.
    assert all(row.diff_text is None for row in report.rows)
    assert "diff_text" not in report.model_dump()["rows"][0]

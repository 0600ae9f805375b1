"""``rubric check --mutants``: the oracle's mutants printed beside the admission rows (text and --json),
never changing the admission verdict or the exit code; ``--harmless FILE``; bad input is exit 2."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from grading.cli.rubric import main
from grading.mutants.derive import Mutant, derive_mutants
from tests.gitrepo import GitRepo
from tests.grading.cli_helpers import check, own_stores
from tests.grading.mutant_helpers import Oracle, Task, verdicts


@pytest.fixture
def task(tmp_path: Path, git_repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> Task:
    own_stores(tmp_path, monkeypatch)
    task = Task(tmp_path, Oracle(git_repo))
    oracle = (task.dir / "oracle.diff").read_bytes()
    task.script["by_diff_sha256"][hashlib.sha256(oracle).hexdigest()] = verdicts()  # admitted
    return task


def mutant(task: Task, kind: str, text: str) -> Mutant:
    mutants = derive_mutants((task.dir / "oracle.diff").read_bytes()).mutants
    return next(m for m in mutants if m.kind == kind and text in m.description)


def test_mutants_are_listed_beside_the_rows_and_the_verdict_stands(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = mutant(task, "revert-file", "docs/changes.md")
    operator = mutant(task, "revert-condition", "operator")
    task.answer(docs, verdicts())
    task.answer(operator, verdicts())
    harmless = task.dir.parent / "harmless.txt"
    harmless.write_text(f"# reviewed\n{docs.id} the changelog is written at release time\n")
    assert main(check(task, "--mutants", "--harmless", str(harmless))) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in out[1:3]] == [["ok", "empty"], ["ok", "oracle"]]
    assert out[3] == "admitted"
    assert out[4] == (
        "mutants of oracle.diff (scripted judge), an authoring aid (admission is unchanged): 12 judged, "
        "10 caught, 1 marked harmless, 1 still mergeable; 12 judge calls"
    )
    lines = {line.split()[1]: line for line in out[5:17]}
    assert len(lines) == 12
    assert lines[operator.id].startswith(f"MERGEABLE {operator.id}  swaps the operator back in src/common/")
    assert lines[operator.id].endswith("actual: still mergeable: every measured blocker passes")
    assert lines[docs.id].startswith("harmless ")
    assert lines[docs.id].endswith("(harmless: the changelog is written at release time)")
    caught = [line for line in lines.values() if line.startswith("caught ")]
    assert len(caught) == 10 and all(
        line.endswith("actual: caught: not mergeable: fails B1") for line in caught
    )
    assert out[-1] == (
        "1 mutant still mergeable: add the blocker each reveals, or mark it harmless (--harmless FILE): "
        + operator.id
    )


def test_json_keeps_the_admission_report_and_adds_the_mutants(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(task.dir.parent / "store.sqlite3")
    # With the checkout, mutants of Python files are checked to parse (these all do: no note about them).
    data = json.loads((task.dir / "task.json").read_text())
    (task.dir / "task.json").write_text(json.dumps({**data, "base_commit": task.oracle.base}))
    checkout = ("--checkout", str(task.oracle.repo.path))
    assert main(check(task, "--json", "--store", store, *checkout)) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main(check(task, "--json", "--store", store, *checkout, "--mutants", "--max-mutants", "3")) == 0
    combined: dict[str, Any] = json.loads(capsys.readouterr().out)
    mutants = combined.pop("mutants")
    # The admission report is the same one (read back from the store the second time).
    assert combined.pop("from_store") is True and plain.pop("from_store") is False
    assert combined.pop("calls") == 0 and plain.pop("calls") == 2
    assert combined == plain
    assert mutants["capped"] is True and mutants["derived"] == 12 and mutants["total"] == 3
    assert [row["kind"] for row in mutants["rows"]] == ["drop-hunk", "revert-file", "one-place"]
    assert mutants["notes"] == [
        "capped: 12 mutants derived, 3 judged (taken in turn from each kind); "
        "raise --max-mutants to judge more"
    ]
    assert mutants["caught"] == 3 and mutants["still_mergeable"] == []
    assert all(row["judge"]["scripted"] for row in mutants["rows"])


def test_a_failing_admission_exits_1_whatever_the_mutants(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    task.script["by_diff_sha256"] = {}  # the oracle fails B1 too: not admitted; every mutant is caught
    assert main(check(task, "--mutants")) == 1
    out = capsys.readouterr().out
    assert "not admitted: 1 of 2 rows does not hold" in out
    assert "12 judged, 12 caught, 0 marked harmless, 0 still mergeable" in out
    # Every mutant still mergeable does not make an admitted rubric fail either (test above: exit 0).


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--harmless", "harmless.txt"], "rubric: error: --harmless: only with --mutants"),
        (["--max-mutants", "3"], "rubric: error: --max-mutants: only with --mutants"),
        (
            ["--mutants", "--harmless", "harmless.txt"],
            "harmless.txt: line 2: 'revert-file:abc' is not a mutant id",
        ),
        (["--mutants", "--harmless", "missing.txt"], "missing.txt: file not found"),
    ],
)
def test_bad_input_is_exit_2_before_any_judge_call(
    task: Task,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    extra: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(task.dir.parent)
    (task.dir.parent / "harmless.txt").write_text("# ids\nrevert-file:abc nope\n")
    assert main(check(task, *extra)) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    assert message in captured.err
    # Refused before the admission store was opened, so before any judge call.
    assert not (task.dir.parent / "xdg").exists()


def test_a_negative_cap_is_a_usage_error(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(check(task, "--mutants", "--max-mutants", "-1"))
    assert exited.value.code == 2
    assert "--max-mutants: -1: must be 0 or more" in capsys.readouterr().err

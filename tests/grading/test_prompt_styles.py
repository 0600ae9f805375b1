"""§8 prompt styles: a task.json may carry the spec and the issue prompt; the run's prompt_style picks the
one the judge's task statement shows, and `rubric check --prompt-style` calibrates with the one asked for.
Old task.json files (one `prompt`, its `prompt_style`) keep their meaning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from grading.admission.store import AdmissionStore
from grading.checks.outcome import grade_run
from grading.cli.rubric import main
from grading.errors import InputError
from grading.judge.cache import MemoryCache
from grading.loaders import load_task
from tests.grading.cli_helpers import grade_argv
from tests.grading.judge.judge_helpers import FakeBackend
from tests.grading.task_helpers import FIXED, Task

SPEC = "Change add() in src/calc.py to return a + b; do not weaken tests."
ISSUE = "add(2, 2) gives 0."


@pytest.fixture
def task(tmp_path: Path) -> Task:
    return Task(tmp_path)


def write_task(task: Task, **fields: Any) -> Path:
    path = task.dir / "task.json"
    path.write_text(json.dumps({"id": "fix_add", "gate": ["pass", "mergeable"], **fields}))
    return path


def run_with_style(task: Task, name: str, style: str | None) -> Path:
    run = task.make_run(name, FIXED, {"pass": True})
    record = json.loads((run / "run.json").read_text())
    if style is not None:
        record["prompt_style"] = style
    (run / "run.json").write_text(json.dumps(record))
    return run


def statement(backend: FakeBackend) -> str:
    """The task prompt section of the judge's request."""
    text = backend.requests[0].rubric_text
    return text.split("# Task prompt given to the author of the change\n")[1].split(
        "\n# What the maintainer"
    )[0]


def test_an_old_task_json_keeps_its_one_prompt(task: Task) -> None:
    write_task(task, prompt=ISSUE, prompt_style="issue")
    spec = load_task(task.dir)
    assert (spec.prompt, spec.prompt_style, spec.prompt_variants()) == (ISSUE, "issue", {"issue": ISSUE})


def test_prompts_carry_both_variants_and_prompt_style_names_the_default(task: Task) -> None:
    write_task(task, prompts={"spec": SPEC, "issue": ISSUE})
    spec = load_task(task.dir)
    assert (spec.prompt, spec.prompt_style) == (SPEC, "spec")
    assert spec.prompt_variants() == {"spec": SPEC, "issue": ISSUE}
    posed = spec.posed_as("issue")
    assert (posed.prompt, posed.prompt_style) == (ISSUE, "issue")

    write_task(task, prompts={"spec": SPEC, "issue": ISSUE}, prompt_style="issue")
    assert load_task(task.dir).prompt == ISSUE
    # One variant and no prompt_style: that variant is the task's style.
    write_task(task, prompts={"issue": ISSUE})
    assert (load_task(task.dir).prompt, load_task(task.dir).prompt_style) == (ISSUE, "issue")
    # prompt stays the prompt_style variant beside prompts of the other style.
    write_task(task, prompt=SPEC, prompts={"issue": ISSUE})
    assert load_task(task.dir).prompt_variants() == {"spec": SPEC, "issue": ISSUE}


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"prompts": {}}, "prompts", "give 'spec', 'issue' or both"),
        ({"prompts": {"issue": ISSUE, "specs": SPEC}}, "prompts.specs", "unknown key"),
        ({"prompts": {"spec": 3}}, "prompts.spec", "valid string"),
        ({"prompts": {"spec": "  "}}, "prompts.spec", "blank"),
        ({"prompts": "both"}, "prompts", "dictionary"),
        ({"prompt": "other", "prompts": {"spec": SPEC}}, "prompt", "differs from prompts.spec"),
        ({"prompt_style": "issue", "prompts": {"spec": SPEC}}, "prompt", "no issue prompt: give 'prompt', "
         "'prompts.issue' or a prompt.md beside task.json"),
    ],
)  # fmt: skip
def test_a_bad_prompts_field_is_one_line_naming_file_and_field(
    task: Task, capsys: pytest.CaptureFixture[str], fields: dict[str, Any], field: str, message: str
) -> None:
    path = write_task(task, **fields)
    run = run_with_style(task, "r", None)
    argv = grade_argv(task, run)

    assert main(argv) == 2

    err = capsys.readouterr().err.strip()
    assert err.startswith(f"rubric: error: {path}: {field}: ") and message in err, err
    assert not (run / "metrics.json").exists()


@pytest.mark.parametrize(("style", "shown"), [(None, SPEC), ("spec", SPEC), ("issue", ISSUE)])
def test_the_run_s_prompt_style_picks_the_judge_s_task_statement(
    task: Task, style: str | None, shown: str
) -> None:
    write_task(task, prompts={"spec": SPEC, "issue": ISSUE})
    backend = FakeBackend()

    grade_run(task.dir, run_with_style(task, "r", style), task.manifest, backend, cache=MemoryCache())

    assert statement(backend).strip() == shown


def test_a_run_posed_in_a_style_the_task_lacks_is_bad_input(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    write_task(task, prompt=SPEC)
    run = run_with_style(task, "r", "issue")
    with pytest.raises(InputError) as caught:
        grade_run(task.dir, run, task.manifest, FakeBackend(), cache=MemoryCache())
    assert str(caught.value) == (
        f"{run / 'run.json'}: prompt_style: the task carries no issue prompt "
        "(spec only: add prompts.issue to task.json)"
    )


def test_rubric_judge_shows_each_run_its_own_variant(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    write_task(task, prompts={"spec": SPEC, "issue": ISSUE})
    task.backend()
    runs = [run_with_style(task, "spec_run", "spec"), run_with_style(task, "issue_run", "issue")]
    argv = ["judge", str(task.dir), *map(str, runs), "--judge", f"scripted:{task.judge}", "--render-only"]

    assert main([*argv, "--manifest", str(task.manifest)]) == 0

    requests = json.loads(capsys.readouterr().out)["requests"]
    texts = [json.dumps(r["request"]) for r in requests]
    assert json.dumps(SPEC)[1:-1] in texts[0] and json.dumps(ISSUE)[1:-1] not in texts[0]
    assert json.dumps(ISSUE)[1:-1] in texts[1] and json.dumps(SPEC)[1:-1] not in texts[1]


def test_calibration_follows_the_style_it_is_asked_for(task: Task) -> None:
    write_task(task, prompts={"spec": SPEC, "issue": ISSUE})
    for style, shown in ((None, SPEC), ("issue", ISSUE), ("spec", SPEC)):
        backend = FakeBackend()
        task.check(backend=backend, prompt_style=style)
        assert backend.requests and {statement_of(r.rubric_text) for r in backend.requests} == {shown}


def test_calibrating_in_a_style_the_task_lacks_is_exit_2(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    write_task(task, prompt=SPEC)
    task.backend()
    argv = ["check", str(task.dir), "--manifest", str(task.manifest), "--judge", f"scripted:{task.judge}"]

    assert main([*argv, "--prompt-style", "issue", "--store", str(task.dir.parent / "store.db")]) == 2

    assert capsys.readouterr().err.strip() == (
        "rubric: error: --prompt-style: the task carries no issue prompt "
        "(spec only: add prompts.issue to task.json)"
    )


def statement_of(rubric_text: str) -> str:
    return (
        rubric_text.split("# Task prompt given to the author of the change\n")[1]
        .split("\n# What the maintainer")[0]
        .strip()
    )


def test_the_report_splits_by_the_run_s_style_when_the_task_carries_both(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    write_task(task, prompts={"spec": SPEC, "issue": ISSUE})
    runs = [run_with_style(task, name, style) for name, style in (("s", "spec"), ("i", "issue"), ("u", None))]
    for run in runs:
        grade_run(task.dir, run, task.manifest, FakeBackend(), cache=MemoryCache())

    tasks = task.dir.parent / "tasks"
    (tasks / "fix_add").mkdir(parents=True)
    (tasks / "fix_add" / "task.json").write_bytes((task.dir / "task.json").read_bytes())
    argv = ["report", *map(str, runs), "--tasks", str(tasks), "--json", "--bootstrap", "0"]
    assert main(argv) == 0

    cells = json.loads(capsys.readouterr().out)["by_prompt_style"]
    # The run that does not say is of unknown style: the task was posed both ways.
    assert [(c["prompt_style"], c["runs"]) for c in cells] == [("issue", 1), ("spec", 1), (None, 1)]


def test_each_style_has_its_own_stored_admission_report(task: Task, tmp_path: Path) -> None:
    write_task(task, prompts={"spec": SPEC, "issue": ISSUE})
    store = AdmissionStore(tmp_path / "store.db")
    assert not task.check(store=store, prompt_style="spec").from_store
    assert task.check(store=store, prompt_style="spec").from_store
    assert not task.check(store=store, prompt_style="issue").from_store

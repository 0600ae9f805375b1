"""Agent-run import: `manage.py import_runs` and the zip upload; all or nothing, repeated imports change
nothing, metrics.json verdicts stored per judge and item."""

from __future__ import annotations

import builtins
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from grading import InputError, read_run
from rubrics_app.management.commands.load_demo import DEMO_REPETITIONS
from rubrics_app.models import (
    AgentRun,
    AgentRunDiff,
    HumanVerdict,
    ItemVerdict,
    JudgeGrade,
    JudgeRole,
    Repository,
    RubricRevision,
    RunGrade,
    Task,
)
from rubrics_app.services.runs.queue import Queue
from rubrics_app.services.runs.store import revision_sha256
from rubrics_app.services.sweeps.inputs import run_model
from tests.app.command_helpers import command_output
from tests.app.runs_helpers import (
    DISAGREEING,
    PASSING,
    RUN_DIFF,
    grade,
    sha256_of,
    write_run,
    write_scripted,
    write_task_dir,
    zip_dir,
)

pytestmark = pytest.mark.django_db


def run_command(*args: str) -> tuple[str, str]:
    return command_output("import_runs", *args)


@pytest.fixture
def graded_runs(tmp_path: Path, task: Task) -> Path:
    """Two runs of the task graded by `rubric grade` with a primary and a second (disagreeing) judge, and a
    third run with no metrics.json."""
    task_dir = write_task_dir(tmp_path / "checkout")
    primary = write_scripted(tmp_path / "primary.json", PASSING)
    second = write_scripted(tmp_path / "second.json", DISAGREEING)
    runs = tmp_path / "runs"
    for repetition in (0, 1):
        run_dir = write_run(runs, f"rep{repetition}", repetition=repetition)
        grade(task_dir, run_dir, primary, second)
    write_run(runs, "ungraded", model="model-b")
    return runs


def test_import_runs_stores_runs_grades_and_each_judges_verdicts(
    graded_runs: Path, repository: Repository
) -> None:
    out, _ = run_command(str(graded_runs), "--repository", repository.name)
    assert "3 runs imported, 0 already there; 2 grades imported" in out
    assert AgentRun.objects.count() == 3
    run = AgentRun.objects.get(repetition=1, model="model-a")
    assert (run.arm, run.passed, run.tests_list) == ("guidance", True, "tests/test_fraction.py::test_gt1\n")
    assert bytes(AgentRunDiff.objects.get(run=run).content) == RUN_DIFF
    graded = RunGrade.objects.get(run=run)
    # Only the primary judge counts: B1 passes; N1 and N3 pass, N2 (weight 2) fails.
    assert (graded.status, graded.mergeable, graded.merge_score) == ("mergeable", True, 0.5)
    primary = JudgeGrade.objects.get(grade=graded, role=JudgeRole.PRIMARY)
    second = JudgeGrade.objects.get(grade=graded, role=JudgeRole.SECOND)
    assert primary.scripted and primary.model_id == "scripted"
    b1 = ItemVerdict.objects.get(judge=second, item_id="B1")
    assert b1.verdict == "fail" and b1.locations == [{"file": "src/fraction.py", "line": 3, "side": "new"}]
    assert ItemVerdict.objects.get(judge=primary, item_id="B1").verdict == "pass"
    assert sorted(ItemVerdict.objects.filter(judge=primary).values_list("item_id", flat=True)) == [
        "B1",
        "N1",
        "N2",
        "N3",
    ]
    assert not RunGrade.objects.filter(run__model="model-b").exists()


def test_importing_the_same_runs_again_changes_nothing(graded_runs: Path, repository: Repository) -> None:
    run_command(str(graded_runs), "--repository", repository.name)
    counts = [m.objects.count() for m in (AgentRun, AgentRunDiff, RunGrade, JudgeGrade, ItemVerdict)]
    out, _ = run_command(str(graded_runs), "--repository", repository.name)
    assert "0 runs imported, 3 already there; 0 grades imported, 2 already there" in out
    assert [m.objects.count() for m in (AgentRun, AgentRunDiff, RunGrade, JudgeGrade, ItemVerdict)] == counts


def test_a_metrics_json_graded_later_is_added_to_the_stored_run(
    tmp_path: Path, graded_runs: Path, repository: Repository
) -> None:
    run_command(str(graded_runs), "--repository", repository.name)
    task_dir = tmp_path / "checkout" / "tasks" / "fix_fraction_gt1"
    grade(task_dir, graded_runs / "ungraded", write_scripted(tmp_path / "p.json", PASSING))
    out, _ = run_command(str(graded_runs), "--repository", repository.name)
    assert "0 runs imported, 3 already there; 1 grade imported, 2 already there" in out
    assert RunGrade.objects.filter(run__model="model-b").count() == 1


def test_a_different_run_under_a_stored_key_is_refused(graded_runs: Path, repository: Repository) -> None:
    run_command(str(graded_runs), "--repository", repository.name)
    (graded_runs / "ungraded" / "workspace.diff").write_bytes(RUN_DIFF + b"+more\n")
    with pytest.raises(CommandError) as exc:
        run_command(str(graded_runs), "--repository", repository.name)
    assert exc.value.returncode == 2
    stored = AgentRun.objects.get(model="model-b")
    assert bytes(AgentRunDiff.objects.get(run=stored).content) == RUN_DIFF


def test_bad_runs_are_listed_with_file_and_field_and_nothing_is_imported(
    tmp_path: Path, graded_runs: Path, repository: Repository
) -> None:
    bad = write_run(graded_runs, "bad_grade", model="model-c")
    (bad / "grade.json").write_text('{"passed": true}')
    unknown = write_run(graded_runs, "unknown_task", task_id="no_such_task", model="model-d")
    missing = write_run(graded_runs, "no_diff", model="model-e")
    (missing / "workspace.diff").unlink()
    broken = write_run(graded_runs, "broken_metrics", model="model-f")
    (broken / "metrics.json").write_text('{"mergeable": true, "pass": true,}')
    err = io.StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("import_runs", str(graded_runs), "--repository", repository.name, stderr=err)
    assert exc.value.returncode == 2
    lines = err.getvalue().splitlines()
    assert f"{graded_runs}/bad_grade/grade.json: pass: required" in lines
    assert f"{graded_runs}/unknown_task/run.json: task: no task 'no_such_task' in this repository" in lines
    assert f"{graded_runs}/no_diff/workspace.diff: file not found" in lines
    assert any(line.startswith(f"{graded_runs}/broken_metrics/metrics.json: line 1") for line in lines)
    assert not AgentRun.objects.exists() and not RunGrade.objects.exists()
    assert unknown.exists()


def test_a_metrics_json_of_another_run_is_refused(
    tmp_path: Path, graded_runs: Path, repository: Repository
) -> None:
    metrics = json.loads((graded_runs / "rep0" / "metrics.json").read_text())
    metrics["pass"] = False
    (graded_runs / "rep0" / "metrics.json").write_text(json.dumps(metrics))
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_runs", str(graded_runs), "--repository", repository.name, stderr=err)
    assert f"{graded_runs}/rep0/metrics.json: pass: differs from the run's grade.json" in err.getvalue()
    assert not AgentRun.objects.exists()


def test_unknown_repository_and_missing_path_exit_2(tmp_path: Path, repository: Repository) -> None:
    with pytest.raises(CommandError) as exc:
        run_command(str(tmp_path), "--repository", "nope")
    assert exc.value.returncode == 2 and "no repository named 'nope'" in str(exc.value)
    with pytest.raises(CommandError) as exc:
        run_command(str(tmp_path / "missing"), "--repository", repository.name)
    assert exc.value.returncode == 2


def test_a_grade_records_the_revision_whose_content_it_was_graded_against(
    tmp_path: Path, admitted_revision: RubricRevision, repository: Repository
) -> None:
    task_dir = write_task_dir(tmp_path / "checkout")
    run_dir = write_run(tmp_path / "runs", "r0")
    sha = revision_sha256(admitted_revision)
    grade(task_dir, run_dir, write_scripted(tmp_path / "p.json", PASSING), rubric_sha256=sha)
    run_command(str(tmp_path / "runs"), "--repository", repository.name)
    graded = RunGrade.objects.get()
    assert graded.rubric_sha256 == sha and graded.revision == admitted_revision
    assert graded.provisional is False


def test_listing_runs_never_loads_a_diff(graded_runs: Path, repository: Repository) -> None:
    run_command(str(graded_runs), "--repository", repository.name)
    with CaptureQueriesContext(connection) as queries:
        list(AgentRun.objects.filter(task__repository=repository))
    assert all("agentrundiff" not in q["sql"].lower() for q in queries.captured_queries)
    assert all("content" not in q["sql"].lower() for q in queries.captured_queries)


@pytest.mark.parametrize("repetition", [2**31, 2**63, 10**30, -1])
def test_a_repetition_out_of_range_is_a_clear_error_exit_2(
    graded_runs: Path, repository: Repository, repetition: int
) -> None:
    write_run(graded_runs, "huge", model="model-z", repetition=repetition)
    err = io.StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("import_runs", str(graded_runs), "--repository", repository.name, stderr=err)
    assert exc.value.returncode == 2
    [line] = [x for x in err.getvalue().splitlines() if "huge/" in x]
    assert line.startswith(f"{graded_runs}/huge/run.json: repetition: Input should be ")
    assert not AgentRun.objects.exists()


def test_a_run_s_tests_list_error_is_stored_and_given_back_to_grading(
    tmp_path: Path, graded_runs: Path, repository: Repository
) -> None:
    broken = write_run(graded_runs, "broken_listing", model="model-g", tests_list=None)
    error = "'pytest' exited with status 2: ERROR tests/test_x.py\nE   SyntaxError: invalid syntax\n"
    (broken / "tests_list.error").write_text(error)
    run_command(str(graded_runs), "--repository", repository.name)
    run = AgentRun.objects.get(model="model-g")
    assert (run.tests_list, run.tests_list_error) == (None, error)
    graded = run_model(run, RUN_DIFF)
    assert (graded.tests_list_error, graded.tests_list) == (error.strip(), None)


def test_a_tests_list_error_beside_a_tests_list_is_refused(graded_runs: Path, repository: Repository) -> None:
    (graded_runs / "rep0" / "tests_list.error").write_text("'pytest' exited with status 2\n")
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_runs", str(graded_runs), "--repository", repository.name, stderr=err)
    assert f"{graded_runs}/rep0/tests_list.error: beside tests_list.txt" in err.getvalue()
    assert not AgentRun.objects.exists()


def test_a_run_s_git_dir_changes_are_stored_and_given_back_to_grading(
    graded_runs: Path, repository: Repository
) -> None:
    changed = write_run(graded_runs, "hooked", model="model-h")
    (changed / "git_dir_changes.txt").write_text('.git/hooks/pre-commit\n".git/odd\\tname"\n')
    untouched = write_run(graded_runs, "clean", model="model-c")
    (untouched / "git_dir_changes.txt").write_text("")
    run_command(str(graded_runs), "--repository", repository.name)
    hooked, clean = AgentRun.objects.get(model="model-h"), AgentRun.objects.get(model="model-c")
    assert hooked.git_dir_changes == '.git/hooks/pre-commit\n".git/odd\\tname"\n'
    assert run_model(hooked, RUN_DIFF).git_dir_changes == [".git/hooks/pre-commit", ".git/odd\tname"]
    # Captured with nothing changed under .git ("") is not the same as captured without a record (None).
    assert clean.git_dir_changes == "" and run_model(clean, RUN_DIFF).git_dir_changes == []
    without = AgentRun.objects.get(repetition=0, model="model-a")
    assert without.git_dir_changes is None and run_model(without, RUN_DIFF).git_dir_changes is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("../outside\n", "line 1"),
        ("/etc/passwd\n", "line 1: absolute path: '/etc/passwd'"),
        (b"\xff\xfe\n", "not UTF-8"),
    ],
)
def test_a_bad_git_dir_changes_file_imports_nothing_and_names_the_file(
    graded_runs: Path, repository: Repository, content: str | bytes, message: str
) -> None:
    path = graded_runs / "rep0" / "git_dir_changes.txt"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_runs", str(graded_runs), "--repository", repository.name, stderr=err)
    assert f"{graded_runs}/rep0/git_dir_changes.txt" in err.getvalue() and message in err.getvalue()
    assert not AgentRun.objects.exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        # A self-ignoring directory whose count is not the files listed: a plain path list would take it.
        ("build/\n# files: 2\n", "line 2: 'build/' has a count of 2 but lists 0 files"),
        ("build/\n", "line 1: 'build/' has no count but lists 0 files"),
    ],
)
def test_an_ignored_created_file_grading_refuses_is_refused_by_the_import(
    graded_runs: Path, repository: Repository, content: str, message: str
) -> None:
    # Stored, such a run could never be graded: every sweep of it would stop on the file.
    (graded_runs / "rep0" / "ignored_created.txt").write_text(content)
    with pytest.raises(InputError, match="has"):
        read_run(graded_runs / "rep0")
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_runs", str(graded_runs), "--repository", repository.name, stderr=err)
    assert f"{graded_runs}/rep0/ignored_created.txt: {message}" in err.getvalue().splitlines()
    assert not AgentRun.objects.exists()


def test_the_import_reads_each_file_of_a_run_once(
    graded_runs: Path, repository: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = graded_runs / "rep0"
    (run_dir / "git_dir_changes.txt").write_text(".git/hooks/pre-commit\n")
    opened: Counter[str] = Counter()
    real_open = io.open

    def counting_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, str | Path) and Path(file).parent == run_dir:
            opened[Path(file).name] += 1
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", counting_open)  # what pathlib calls
    monkeypatch.setattr(builtins, "open", counting_open)
    run_command(str(graded_runs), "--repository", repository.name)
    monkeypatch.setattr(io, "open", real_open)
    monkeypatch.setattr(builtins, "open", real_open)
    small = ("run.json", "grade.json", "ignored_created.txt", "tests_list.txt", "git_dir_changes.txt")
    assert {name: opened[name] for name in (*small, "metrics.json")} == dict.fromkeys(
        (*small, "metrics.json"), 1
    )
    # The diff alone is read twice: hashed in chunks while every run is checked, read whole when it is stored.
    assert opened["workspace.diff"] == 2


# --- the zip upload on the repository page -----------------------------------------------------------


def upload(
    client: Client, repository: Repository, data: bytes, name: str = "runs.zip", follow: bool = False
) -> object:
    url = reverse("rubrics:runs_upload", args=[repository.pk])
    return client.post(url, {"file": SimpleUploadedFile(name, data)}, follow=follow)


def test_a_zip_of_runs_is_imported_by_a_maintainer(
    client: Client, maintainer: User, graded_runs: Path, repository: Repository
) -> None:
    client.force_login(maintainer)
    response = upload(client, repository, zip_dir(graded_runs, "batch/"))
    assert response.status_code == 302  # type: ignore[attr-defined]
    assert AgentRun.objects.count() == 3 and RunGrade.objects.count() == 2
    # The page it leads to says the runs still need a sweep, and opens at the Sweep button.
    where = response["Location"]  # type: ignore[index]
    assert where == reverse("rubrics:repository_detail", args=[repository.pk]) + "#sweeps"
    page = " ".join(client.get(where).content.decode().split())
    assert (
        "The new runs are not graded yet by this repository&#x27;s judges: Sweep (below) grades them." in page
    )
    assert 'id="sweeps"' in page and 'class="inline sweep-form"' in page
    again = upload(client, repository, zip_dir(graded_runs, "batch/"))
    assert AgentRun.objects.count() == 3 and RunGrade.objects.count() == 2
    assert "#" not in again["Location"]  # type: ignore[index]
    assert "not graded yet" not in client.get(again["Location"]).content.decode()  # type: ignore[index]


def test_an_htmx_run_import_loads_the_repository_page_so_its_message_shows(
    client: Client, maintainer: User, graded_runs: Path, repository: Repository
) -> None:
    """From the repository page itself, a move to the same page and a #fragment would only scroll."""
    client.force_login(maintainer)
    url = reverse("rubrics:runs_upload", args=[repository.pk])
    file = SimpleUploadedFile("runs.zip", zip_dir(graded_runs, "batch/"))
    page_url = reverse("rubrics:repository_detail", args=[repository.pk])
    headers = {"HX-Request": "true", "HX-Current-URL": f"http://testserver{page_url}"}
    response = client.post(url, {"file": file}, headers=headers)
    assert response.status_code == 200
    assert response["HX-Redirect"] == page_url
    page = " ".join(client.get(response["HX-Redirect"]).content.decode().split())
    assert "The new runs are not graded yet" in page


@pytest.mark.usefixtures("no_scratch_folder")
def test_a_zip_of_runs_is_read_from_the_archive_never_unpacked_to_a_folder(
    client: Client, maintainer: User, graded_runs: Path, repository: Repository
) -> None:
    client.force_login(maintainer)
    run_json = graded_runs / "rep1" / "run.json"
    good = run_json.read_bytes()
    run_json.write_text('{"task": "fix_fraction_gt1", "repetition": "one"}')
    broken = zip_dir(graded_runs, "batch/")
    run_json.write_bytes(good)
    html = upload(client, repository, broken, follow=True).content.decode()  # type: ignore[attr-defined]
    assert "Nothing was imported." in html and "batch/rep1/run.json: repetition:" in html
    assert not AgentRun.objects.exists()

    response = upload(client, repository, zip_dir(graded_runs, "batch/"))
    assert response.status_code == 302  # type: ignore[attr-defined]
    assert AgentRun.objects.count() == 3 and RunGrade.objects.count() == 2
    for run in AgentRun.objects.all():
        folder = graded_runs / run.source.removeprefix("batch/")
        assert bytes(AgentRunDiff.objects.get(run=run).content) == (folder / "workspace.diff").read_bytes()
        assert run.files_sha256["run.json"] == sha256_of((folder / "run.json").read_bytes())


def test_a_bad_zip_imports_nothing_and_lists_the_problems(
    client: Client, maintainer: User, graded_runs: Path, repository: Repository
) -> None:
    (graded_runs / "rep1" / "run.json").write_text('{"task": "fix_fraction_gt1", "repetition": "one"}')
    client.force_login(maintainer)
    response = upload(client, repository, zip_dir(graded_runs), follow=True)
    html = response.content.decode()  # type: ignore[attr-defined]
    assert response.status_code == 200  # type: ignore[attr-defined]
    assert "Nothing was imported." in html and "rep1/run.json: repetition:" in html
    assert not AgentRun.objects.exists()


def test_an_upload_with_a_huge_repetition_is_a_form_error_not_a_500(
    client: Client, maintainer: User, graded_runs: Path, repository: Repository
) -> None:
    write_run(graded_runs, "huge", model="model-z", repetition=2**63)
    client.force_login(maintainer)
    response = upload(client, repository, zip_dir(graded_runs), follow=True)
    html = response.content.decode()  # type: ignore[attr-defined]
    assert response.status_code == 200  # type: ignore[attr-defined]
    assert "Nothing was imported." in html and "huge/run.json: repetition: Input should be" in html
    assert not AgentRun.objects.exists()


def test_a_traversal_member_is_refused_by_the_rubric_zip_checks(
    client: Client, maintainer: User, repository: Repository
) -> None:
    buffer = io.BytesIO()
    import zipfile

    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("../evil/run.json", "{}")
    client.force_login(maintainer)
    response = upload(client, repository, buffer.getvalue(), follow=True)
    assert "path leaves the archive" in response.content.decode()  # type: ignore[attr-defined]
    assert not AgentRun.objects.exists()


@pytest.mark.parametrize("who", ["reviewer", "viewer"])
def test_only_maintainers_upload_runs(
    client: Client, request: pytest.FixtureRequest, who: str, graded_runs: Path, repository: Repository
) -> None:
    client.force_login(request.getfixturevalue(who))
    assert upload(client, repository, zip_dir(graded_runs)).status_code == 403  # type: ignore[attr-defined]
    assert not AgentRun.objects.exists()


def test_outsiders_get_404_on_upload(
    client: Client, outsider: User, graded_runs: Path, repository: Repository
) -> None:
    client.force_login(outsider)
    assert upload(client, repository, zip_dir(graded_runs)).status_code == 404  # type: ignore[attr-defined]
    assert not HumanVerdict.objects.exists()


def test_the_task_page_lists_runs_and_grades_without_reading_diffs_or_metrics(
    tmp_path: Path, client: Client, viewer: User, graded_runs: Path, repository: Repository, task: Task
) -> None:
    run_command(str(graded_runs), "--repository", repository.name)
    client.force_login(viewer)
    url = reverse("rubrics:task_detail", args=[repository.pk, task.pk])
    with CaptureQueriesContext(connection) as queries:
        html = client.get(url).content.decode()
    assert html.count("0.500") == 2 and "not graded yet" in html
    sql = [q["sql"].lower() for q in queries.captured_queries]
    assert not any("agentrundiff" in q for q in sql)
    assert not any('"rubrics_app_rungrade"."metrics"' in q for q in sql)
    # More runs, the same number of queries.
    for repetition in (5, 6, 7):
        write_run(graded_runs, f"more{repetition}", repetition=repetition)
    run_command(str(graded_runs), "--repository", repository.name)
    with CaptureQueriesContext(connection) as more:
        client.get(url)
    assert len(more.captured_queries) == len(queries.captured_queries)


def test_the_demo_imports_the_example_runs_with_two_judges_for_the_queue(
    settings: Any, tmp_path: Path
) -> None:
    settings.VAR_DIR = tmp_path / "var"
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    runs = 2 * DEMO_REPETITIONS  # the two example runs, each as repetitions 0 to DEMO_REPETITIONS - 1
    assert f"agent runs: {runs} runs imported" in out.getvalue()
    repository = Repository.objects.get(name="shapes")
    imported = AgentRun.objects.filter(task__repository=repository)
    assert sorted(imported.values_list("arm", "repetition")) == sorted(
        (arm, repetition) for arm in ("baseline", "guidance") for repetition in range(DEMO_REPETITIONS)
    )
    second = JudgeGrade.objects.filter(role=JudgeRole.SECOND)
    assert second.count() == runs and all(j.scripted for j in second)
    entries = Queue(repository, "judges", {}).page(1, 1000).entries
    assert sorted({(e.arm, e.item_id) for e in entries}) == [
        ("baseline", "B1"),
        ("baseline", "N1"),
        ("guidance", "B1"),
        ("guidance", "N1"),
    ]
    assert len(entries) == 2 * runs
    call_command("load_demo", stdout=io.StringIO())
    assert AgentRun.objects.count() == runs


def test_a_run_stored_by_a_concurrent_import_is_a_problem_not_a_crash(
    graded_runs: Path, repository: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_command(str(graded_runs), "--repository", repository.name)
    # As if another import stored these runs after this one looked: the insert hits the unique key.
    monkeypatch.setattr("rubrics_app.services.runs.store._check_against_stored", lambda runs, problems: {})
    err = io.StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("import_runs", str(graded_runs), "--repository", repository.name, stderr=err)
    assert exc.value.returncode == 2 and "at the same time; nothing imported" in err.getvalue()
    assert AgentRun.objects.count() == 3


def test_a_metrics_json_a_report_reads_but_the_strict_reader_refuses_is_named_by_field(
    graded_runs: Path, repository: Repository
) -> None:
    """What only grading's strict read_metrics refuses (the grader's RunDetails, a sha256) is listed as the
    app's own model listed it."""
    metrics = json.loads((graded_runs / "rep0" / "metrics.json").read_text())
    metrics["rubric_sha256"] = "not-a-sha256"
    metrics["details"]["reasons"] = "one reason"  # a report does not read the reasons
    (graded_runs / "rep0" / "metrics.json").write_text(json.dumps(metrics))
    err = io.StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("import_runs", str(graded_runs), "--repository", repository.name, stderr=err)
    assert exc.value.returncode == 2
    lines = err.getvalue().splitlines()
    where = f"{graded_runs}/rep0/metrics.json"
    assert f"{where}: rubric_sha256: String should match pattern '^[0-9a-f]{{64}}$'" in lines, lines
    assert f"{where}: details.reasons: Input should be a valid list" in lines, lines
    assert not AgentRun.objects.exists()


def test_a_metrics_json_contradicting_its_status_is_refused_as_a_report_would(
    graded_runs: Path, repository: Repository
) -> None:
    metrics = json.loads((graded_runs / "rep0" / "metrics.json").read_text())
    metrics["grader_failure"] = not metrics["grader_failure"]
    (graded_runs / "rep0" / "metrics.json").write_text(json.dumps(metrics))
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_runs", str(graded_runs), "--repository", repository.name, stderr=err)
    status = metrics["details"]["status"]
    field = f"grader_failure: {metrics['grader_failure']} contradicts details.status {status!r}"
    assert f"{graded_runs}/rep0/metrics.json: {field}" in err.getvalue()
    assert not AgentRun.objects.exists()


def test_a_member_inflating_past_its_cap_is_refused_before_any_is_read(
    client: Client, maintainer: User, graded_runs: Path, repository: Repository, settings: Any
) -> None:
    diff = (graded_runs / "rep0" / "workspace.diff").read_bytes()
    settings.ZIP_MAX_MEMBER_BYTES = len(diff) - 1
    client.force_login(maintainer)
    response = upload(client, repository, zip_dir(graded_runs, "batch/"), follow=True)
    html = response.content.decode()  # type: ignore[attr-defined]
    assert response.status_code == 200  # type: ignore[attr-defined]
    limit = f"{len(diff)} bytes uncompressed; the limit is {len(diff) - 1}"
    assert f"batch/rep0/workspace.diff: {limit}" in html
    assert not AgentRun.objects.exists()


def test_a_run_zip_error_names_the_member_not_the_servers_folder(
    client: Client, maintainer: User, graded_runs: Path, repository: Repository
) -> None:
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("batch/rep0/run.json", b"{}")
        archive.writestr("batch/rep0/run.json/inside", b"x")  # cannot be unpacked: run.json is a file
    client.force_login(maintainer)
    response = upload(client, repository, buffer.getvalue(), follow=True)
    html = response.content.decode()  # type: ignore[attr-defined]
    assert response.status_code == 200 and "batch/rep0/run.json/inside" in html  # type: ignore[attr-defined]
    errors = html[html.index("Nothing was imported.") :]
    assert "batch/rep0/run.json/inside" in errors and "runs-upload-" not in errors

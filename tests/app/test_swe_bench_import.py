"""Runs from the SWE-bench harness (services/runs/swe_bench.py): predictions.jsonl and the per-instance
report.json files, shaped as the harness writes them (logs/run_evaluation/RUN_ID/MODEL/INSTANCE/report.json),
through `manage.py import_runs --format swe-bench` and the upload; all or nothing, every bad line named."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from grading import MAX_RUN_INT
from rubrics_app.models import AgentRun, AgentRunDiff, Repository, Task

pytestmark = pytest.mark.django_db

MODEL = "20240620_sweagent_claude3.5sonnet"
ASTROPY = "astropy__astropy-12907"
DJANGO = "django__django-11099"
SYMPY = "sympy__sympy-20590"
PATCH = (
    "diff --git a/astropy/modeling/separable.py b/astropy/modeling/separable.py\n"
    "--- a/astropy/modeling/separable.py\n"
    "+++ b/astropy/modeling/separable.py\n"
    "@@ -242,7 +242,7 @@ def _cstack(left, right):\n"
    "         cright = _coord_matrix(right, 'right', noutp)\n"
    "     else:\n"
    "         cright = np.zeros((noutp, right.shape[1]))\n"
    "-        cright[-right.shape[0]:, -right.shape[1]:] = 1\n"
    "+        cright[-right.shape[0]:, -right.shape[1]:] = right\n"
    " \n"
    "     return np.hstack([cleft, cright])\n"
)
DJANGO_PATCH = (
    "diff --git a/django/contrib/auth/validators.py b/django/contrib/auth/validators.py\n"
    "--- a/django/contrib/auth/validators.py\n"
    "+++ b/django/contrib/auth/validators.py\n"
    "@@ -7,7 +7,7 @@\n"
    " @deconstructible\n"
    " class ASCIIUsernameValidator(validators.RegexValidator):\n"
    "-    regex = r'^[\\w.@+-]+$'\n"
    "+    regex = r'^[\\w.@+-]+\\Z'\n"
)


def report(instance_id: str, resolved: bool) -> dict[str, Any]:
    """One report.json as the harness writes it (swebench.harness.grading.get_eval_report)."""
    failing = (
        [] if resolved else ["astropy/modeling/tests/test_separable.py::test_separable[compound_model6]"]
    )
    return {
        instance_id: {
            "patch_is_None": False,
            "patch_exists": True,
            "patch_successfully_applied": True,
            "resolved": resolved,
            "tests_status": {
                "FAIL_TO_PASS": {
                    "success": [] if not resolved else ["tests/test_x.py::test_fixed"],
                    "failure": failing,
                },
                "PASS_TO_PASS": {"success": ["tests/test_x.py::test_kept"], "failure": []},
                "FAIL_TO_FAIL": {"success": [], "failure": []},
                "PASS_TO_FAIL": {"success": [], "failure": []},
            },
        }
    }


@pytest.fixture
def tasks(repository: Repository) -> list[Task]:
    return [
        Task.objects.create(
            repository=repository,
            task_id=instance,
            spec_prompt="Fix it.",
            base_commit="0123456789abcdef0123456789abcdef01234567",
        )  # fmt: skip
        for instance in (ASTROPY, DJANGO, SYMPY)
    ]


def write_predictions(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def write_reports(root: Path, reports: dict[str, dict[str, Any]], model: str = MODEL) -> Path:
    """logs/run_evaluation/RUN_ID/MODEL/INSTANCE/report.json, the model's / written as __ as the harness
    writes its folder."""
    for instance_id, data in reports.items():
        folder = root / "logs" / "run_evaluation" / "my_eval" / model.replace("/", "__") / instance_id
        folder.mkdir(parents=True)
        (folder / "report.json").write_text(json.dumps(data, indent=4))
    return root


@pytest.fixture
def harness_output(tmp_path: Path, tasks: list[Task]) -> tuple[Path, Path]:
    predictions = write_predictions(
        tmp_path / "predictions.jsonl",
        [
            {"instance_id": ASTROPY, "model_name_or_path": MODEL, "model_patch": PATCH},
            {"instance_id": DJANGO, "model_name_or_path": MODEL, "model_patch": DJANGO_PATCH},
            {"instance_id": SYMPY, "model_name_or_path": MODEL, "model_patch": ""},  # no report: not run
        ],
    )
    reports = write_reports(
        tmp_path / "eval", {ASTROPY: report(ASTROPY, True), DJANGO: report(DJANGO, False)}
    )
    return predictions, reports


def import_command(predictions: Path, reports: Path, *extra: str) -> str:
    out = io.StringIO()
    call_command(
        "import_runs", "--format", "swe-bench", "--predictions", str(predictions), "--reports", str(reports),
        "--repository", "example-project", "--arm", "swe-agent", *extra, stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    return out.getvalue()


def failing_command(predictions: Path, reports: Path, *extra: str) -> str:
    err = io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command(
            "import_runs", "--format", "swe-bench", "--predictions", str(predictions),
            "--reports", str(reports), "--repository", "example-project", "--arm", "swe-agent", *extra,
            stdout=io.StringIO(), stderr=err,
        )  # fmt: skip
    assert caught.value.returncode == 2
    assert "nothing imported" in str(caught.value)
    return err.getvalue()


def test_each_prediction_becomes_a_run_graded_by_its_report(harness_output: tuple[Path, Path]) -> None:
    out = import_command(*harness_output, "--repetition", "2")
    assert "3 runs imported" in out
    runs = {r.task.task_id: r for r in AgentRun.objects.select_related("task")}
    assert set(runs) == {ASTROPY, DJANGO, SYMPY}
    astropy = runs[ASTROPY]
    assert (astropy.arm, astropy.model, astropy.repetition) == ("swe-agent", MODEL, 2)
    assert bytes(AgentRunDiff.objects.get(run=astropy).content) == PATCH.encode()
    assert astropy.passed is True and astropy.grade_json["pass"] is True
    assert astropy.grade_json["tests_status"]["PASS_TO_PASS"]["success"] == ["tests/test_x.py::test_kept"]
    assert runs[DJANGO].passed is False
    assert runs[DJANGO].grade_json["tests_status"]["FAIL_TO_PASS"]["failure"]
    # An empty patch was not run by the harness: no report, not passed, an empty diff.
    assert runs[SYMPY].passed is False and runs[SYMPY].diff_bytes == 0
    # The harness lists no test ids: the run has no test list, so that integrity part is not measured.
    assert all(r.tests_list is None and r.tests_list_error is None for r in runs.values())
    # Importing the same output again changes nothing.
    assert "0 runs imported, 3 already there" in import_command(*harness_output, "--repetition", "2")


def test_bad_lines_are_listed_with_their_numbers_and_nothing_is_imported(
    tmp_path: Path, harness_output: tuple[Path, Path]
) -> None:
    _, reports = harness_output
    predictions = write_predictions(
        tmp_path / "bad.jsonl",
        [
            {"instance_id": ASTROPY, "model_name_or_path": MODEL, "model_patch": PATCH},  # good
            '{"instance_id": "x", ',
            {"instance_id": DJANGO, "model_patch": DJANGO_PATCH},
            {"instance_id": DJANGO, "model_name_or_path": MODEL, "model_patch": 7},
            ["a list"],
            {"instance_id": ASTROPY, "model_name_or_path": MODEL, "model_patch": PATCH},
        ],
    )
    err = failing_command(predictions, reports)
    name = str(predictions)
    assert f"{name}: line 2: malformed JSON" in err
    assert f"{name}: line 3: model_name_or_path: required: a non-empty string" in err
    assert f"{name}: line 4: model_patch: a string (the diff) or null" in err
    assert f"{name}: line 5: a prediction is a JSON object" in err
    assert f"{name}: line 6: the same instance and model as line 1" in err
    assert AgentRun.objects.count() == 0


def test_unknown_instances_and_missing_reports_import_nothing(
    tmp_path: Path, harness_output: tuple[Path, Path]
) -> None:
    _, reports = harness_output
    predictions = write_predictions(
        tmp_path / "predictions.jsonl",
        [
            {"instance_id": ASTROPY, "model_name_or_path": MODEL, "model_patch": PATCH},
            {"instance_id": "pylint-dev__pylint-7080", "model_name_or_path": MODEL, "model_patch": PATCH},
            {"instance_id": SYMPY, "model_name_or_path": MODEL, "model_patch": PATCH},
        ],
    )
    err = failing_command(predictions, reports)
    assert "line 2: instance_id: no task 'pylint-dev__pylint-7080' in this repository" in err
    assert (
        "line 3: instance_id: no report.json for this instance and model under the reports folder, "
        "nor a run_instance.log: the harness's output holds no evaluation of it"
    ) in err
    assert AgentRun.objects.count() == 0


def test_a_bad_report_is_named_with_its_field(tmp_path: Path, harness_output: tuple[Path, Path]) -> None:
    predictions, _ = harness_output
    broken = report(ASTROPY, True)
    del broken[ASTROPY]["resolved"]
    odd = report(DJANGO, False)
    odd[DJANGO]["tests_status"]["PASS_TO_PASS"]["success"] = "tests/test_x.py::test_kept"
    reports = write_reports(tmp_path / "eval2", {ASTROPY: broken, DJANGO: odd})
    err = failing_command(predictions, reports)
    assert f"{ASTROPY}/report.json: {ASTROPY}.resolved: required: true or false" in err
    assert f"{DJANGO}/report.json: {DJANGO}.tests_status.PASS_TO_PASS: success and failure are lists" in err
    assert AgentRun.objects.count() == 0


def test_missing_options_exit_2(harness_output: tuple[Path, Path]) -> None:
    predictions, _ = harness_output
    with pytest.raises(CommandError, match="missing: --reports, --arm") as caught:
        call_command("import_runs", "--format", "swe-bench", "--predictions", str(predictions),
                     "--repository", "example-project")  # fmt: skip
    assert caught.value.returncode == 2


def zipped(root: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(root).as_posix())
    return buffer.getvalue()


def upload(
    client: Client,
    repository: Repository,
    predictions: Path,
    reports: Path,
    repetition: str,
    *,
    name: str = "predictions.jsonl",
    follow: bool = False,
) -> Any:
    """The upload form posted with ``predictions`` (sent as ``name``) and the zipped ``reports`` folder."""
    return client.post(
        reverse("rubrics:runs_upload_swe_bench", args=[repository.pk]),
        {
            "predictions": SimpleUploadedFile(name, predictions.read_bytes()),
            "reports": SimpleUploadedFile("reports.zip", zipped(reports)),
            "arm": "swe-agent",
            "repetition": repetition,
        },
        follow=follow,
    )


def test_the_upload_imports_the_same_and_shows_every_problem(
    client: Client,
    maintainer: User,
    repository: Repository,
    harness_output: tuple[Path, Path],
    tmp_path: Path,
) -> None:
    predictions, reports = harness_output
    client.force_login(maintainer)
    url = reverse("rubrics:runs_upload_swe_bench", args=[repository.pk])

    def post(predictions_bytes: bytes) -> Any:
        return client.post(url, {
            "predictions": SimpleUploadedFile("predictions.jsonl", predictions_bytes),
            "reports": SimpleUploadedFile("reports.zip", zipped(reports)),
            "arm": "swe-agent", "repetition": "0",
        })  # fmt: skip

    bad = (
        predictions.read_bytes() + b'{"instance_id": "nope", "model_name_or_path": "m", "model_patch": ""}\n'
    )
    response = client.get(post(bad)["Location"])  # the repository page, with the problems
    assert response.status_code == 200
    assert "predictions.jsonl: line 4: instance_id: no task &#x27;nope&#x27; in this repository" in (
        response.content.decode()
    )
    assert AgentRun.objects.count() == 0
    response = post(predictions.read_bytes())
    assert response.status_code == 302
    assert AgentRun.objects.count() == 3


@pytest.mark.usefixtures("no_scratch_folder")
def test_predictions_are_imported_from_memory_never_written_to_a_folder(
    client: Client, maintainer: User, repository: Repository, harness_output: tuple[Path, Path]
) -> None:
    predictions, reports = harness_output
    assert "3 runs imported" in import_command(predictions, reports)
    client.force_login(maintainer)
    response = upload(client, repository, predictions, reports, "1")
    assert response.status_code == 302
    runs = AgentRun.objects.filter(task__task_id=ASTROPY)
    assert sorted(runs.values_list("repetition", "passed", "source")) == [
        (0, True, f"{predictions}/line-1"),
        (1, True, "predictions.jsonl/line-1"),
    ]
    assert {bytes(AgentRunDiff.objects.get(run=run).content) for run in runs} == {PATCH.encode()}


def test_the_upload_lists_every_bad_line_and_report_as_the_command_does(
    client: Client,
    maintainer: User,
    repository: Repository,
    harness_output: tuple[Path, Path],
    tmp_path: Path,
) -> None:
    _, reports = harness_output
    broken = report(DJANGO, False)
    del broken[DJANGO]["resolved"]
    (next(reports.rglob(f"{DJANGO}/report.json"))).write_text(json.dumps(broken))
    predictions = write_predictions(
        tmp_path / "bad.jsonl",
        [
            {"instance_id": ASTROPY, "model_name_or_path": MODEL, "model_patch": PATCH},  # good
            '{"instance_id": "x", ',
            {"instance_id": DJANGO, "model_patch": DJANGO_PATCH},
            {"instance_id": ASTROPY, "model_name_or_path": MODEL, "model_patch": PATCH},
        ],
    )
    client.force_login(maintainer)
    response = upload(client, repository, predictions, reports, "0", follow=True)
    assert response.redirect_chain and response.status_code == 200  # back on the page, with the problems
    page = response.content.decode()
    assert "predictions.jsonl: line 2: malformed JSON" in page
    assert "predictions.jsonl: line 3: model_name_or_path: required: a non-empty string" in page
    assert "predictions.jsonl: line 4: the same instance and model as line 1" in page
    # The bad report is named in the same answer, by its path inside the zip, never the server's folder.
    member = f"reports.zip/logs/run_evaluation/my_eval/{MODEL}/{DJANGO}/report.json"
    assert f"{member}: {DJANGO}.resolved: required: true or false" in page
    assert AgentRun.objects.count() == 0

    # The lines fixed, the bad report alone still imports nothing.
    good = write_predictions(
        tmp_path / "good.jsonl",
        [{"instance_id": DJANGO, "model_name_or_path": MODEL, "model_patch": DJANGO_PATCH}],
    )
    response = upload(client, repository, good, reports, "0", follow=True)
    assert response.redirect_chain and response.status_code == 200  # back on the page, with the problems
    page = response.content.decode()
    assert f"{member}: {DJANGO}.resolved: required: true or false" in page
    assert "swe-bench-upload-" not in page, [line for line in page.splitlines() if "report.json" in line]
    assert AgentRun.objects.count() == 0


def test_each_model_gets_the_report_under_its_own_folder(tmp_path: Path, tasks: list[Task]) -> None:
    """The harness writes RUN_ID/MODEL/INSTANCE/report.json: two models' predictions for one instance are
    graded each by its own model's report, never by another model's."""
    other = "openai/gpt-4o-2024-05-13"
    reports = write_reports(tmp_path / "eval", {ASTROPY: report(ASTROPY, True)})
    write_reports(tmp_path / "eval", {ASTROPY: report(ASTROPY, False)}, model=other)
    predictions = write_predictions(
        tmp_path / "predictions.jsonl",
        [
            {"instance_id": ASTROPY, "model_name_or_path": MODEL, "model_patch": PATCH},
            {"instance_id": ASTROPY, "model_name_or_path": other, "model_patch": PATCH + " "},
        ],
    )
    import_command(predictions, reports)
    assert {r.model: r.passed for r in AgentRun.objects.all()} == {MODEL: True, other: False}

    # A third model with no report of its own is refused, naming whose reports there are.
    third = write_predictions(
        tmp_path / "third.jsonl",
        [{"instance_id": ASTROPY, "model_name_or_path": "someone-else", "model_patch": PATCH}],
    )
    err = failing_command(third, reports)
    assert f"only under other models' folders: {MODEL}, openai__gpt-4o-2024-05-13" in err
    assert AgentRun.objects.count() == 2


def test_a_patch_the_harness_could_not_apply_is_a_run_that_did_not_pass(
    tmp_path: Path, tasks: list[Task]
) -> None:
    """When no way of applying the patch works, the harness writes run_instance.log and no report.json: the
    agent's doing, imported as not passed, never a reason to refuse the file."""
    reports = write_reports(tmp_path / "eval", {ASTROPY: report(ASTROPY, True)})
    folder = reports / "logs" / "run_evaluation" / "my_eval" / MODEL / DJANGO
    folder.mkdir(parents=True)
    (folder / "run_instance.log").write_text(
        "2024-06-20 10:00:01,000 - INFO - Container for django__django-11099 started: 4f2a\n"
        "2024-06-20 10:00:02,000 - INFO - Failed to apply patch to container: git apply --verbose\n"
        "2024-06-20 10:00:03,000 - INFO - Failed to apply patch to container: patch --batch --fuzz=5 -p1 -i\n"
        "2024-06-20 10:00:03,000 - INFO - >>>>> Patch Apply Failed:\npatch: **** malformed patch at line 7\n"
    )
    predictions = write_predictions(
        tmp_path / "predictions.jsonl",
        [
            {"instance_id": ASTROPY, "model_name_or_path": MODEL, "model_patch": PATCH},
            {"instance_id": DJANGO, "model_name_or_path": MODEL, "model_patch": DJANGO_PATCH + "@@ junk\n"},
        ],
    )
    assert "2 runs imported" in import_command(predictions, reports)
    django = AgentRun.objects.get(task__task_id=DJANGO)
    assert django.passed is False
    assert django.grade_json == {"pass": False, "patch_successfully_applied": False}
    assert AgentRun.objects.get(task__task_id=ASTROPY).passed is True


def test_the_reports_folder_can_be_the_model_s_own(tmp_path: Path, harness_output: tuple[Path, Path]) -> None:
    predictions, reports = harness_output
    own = reports / "logs" / "run_evaluation" / "my_eval" / MODEL
    assert "3 runs imported" in import_command(predictions, own)
    assert AgentRun.objects.get(task__task_id=ASTROPY).passed is True


def test_a_repetition_past_the_bound_is_refused_by_the_form_and_the_command(
    client: Client, maintainer: User, repository: Repository, harness_output: tuple[Path, Path]
) -> None:
    predictions, reports = harness_output
    client.force_login(maintainer)
    response = client.post(
        reverse("rubrics:runs_upload_swe_bench", args=[repository.pk]),
        {
            "predictions": SimpleUploadedFile("predictions.jsonl", predictions.read_bytes()),
            "reports": SimpleUploadedFile("reports.zip", zipped(reports)),
            "arm": "swe-agent",
            "repetition": str(2**31),
        },
        follow=True,
    )
    assert f"Ensure this value is less than or equal to {MAX_RUN_INT}." in response.content.decode()
    assert "--repetition: a whole number from 0 to 2147483647" in failing_command(
        predictions, reports, "--repetition", str(2**31)
    )
    assert not AgentRun.objects.exists()


OPENAI = "openai/gpt-4o-2024-05-13"


def run_folder(root: Path, model: str = MODEL) -> Path:
    """logs/run_evaluation/RUN_ID/MODEL under ``root``, as write_reports lays it out."""
    return root / "logs" / "run_evaluation" / "my_eval" / model_folder(model)


def model_folder(model: str) -> str:
    return model.replace("/", "__")


def two_models(tmp_path: Path) -> tuple[Path, Path]:
    """One instance evaluated for two models in one harness run: resolved for MODEL, not for OPENAI."""
    reports = write_reports(tmp_path / "eval", {DJANGO: report(DJANGO, True)})
    write_reports(tmp_path / "eval", {DJANGO: report(DJANGO, False)}, model=OPENAI)
    predictions = write_predictions(
        tmp_path / "predictions.jsonl",
        [
            {"instance_id": DJANGO, "model_name_or_path": MODEL, "model_patch": DJANGO_PATCH},
            {"instance_id": DJANGO, "model_name_or_path": OPENAI, "model_patch": DJANGO_PATCH + " "},
        ],
    )
    return predictions, reports


@pytest.mark.usefixtures("tasks")
def test_one_model_s_folder_never_grades_another_model(tmp_path: Path) -> None:
    """--reports at MODEL's own folder: its report.json lies there with no model folder above it, and is
    MODEL's (the folder is a model's: run_evaluation/RUN_ID/MODEL), never OPENAI's."""
    predictions, reports = two_models(tmp_path)
    err = failing_command(predictions, run_folder(reports))
    assert (
        "line 2: instance_id: no report.json for this instance and model under the reports folder, nor a "
        f"run_instance.log: the harness's output holds no evaluation of it (only under other models' "
        f"folders: {MODEL})"
    ) in err
    assert "line 1" not in err
    assert not AgentRun.objects.exists()

    # The harness's run folder: each model's prediction graded by its own report.
    import_command(predictions, run_folder(reports).parent)
    assert {r.model: r.passed for r in AgentRun.objects.all()} == {MODEL: True, OPENAI: False}


def test_a_report_under_no_model_folder_counts_for_one_model_only(
    client: Client, maintainer: User, repository: Repository, tasks: list[Task], tmp_path: Path
) -> None:
    """A zip of MODEL's folder holds INSTANCE/report.json: nothing names the model. With two models'
    predictions it is nobody's (refused, saying why); with one model's, it is that model's."""
    predictions, reports = two_models(tmp_path)
    client.force_login(maintainer)
    url = reverse("rubrics:runs_upload_swe_bench", args=[repository.pk])

    def post(predictions_bytes: bytes, reports_zip: bytes) -> str:
        response = client.post(url, {
            "predictions": SimpleUploadedFile("predictions.jsonl", predictions_bytes),
            "reports": SimpleUploadedFile("reports.zip", reports_zip),
            "arm": "swe-agent", "repetition": "0",
        }, follow=True)  # fmt: skip
        assert response.status_code == 200
        return response.content.decode()

    page = post(predictions.read_bytes(), zipped(run_folder(reports)))
    assert (
        f"predictions.jsonl: line 1: instance_id: reports.zip/{DJANGO}/report.json lies under no "
        "model&#x27;s folder and names no model, and the predictions are of 2 models: it is not taken as "
        "this model&#x27;s"
    ) in page
    assert "predictions.jsonl: line 2: instance_id: reports.zip/" in page
    assert not AgentRun.objects.exists()

    # A report that names its model (model_name_or_path beside resolved) is that model's only.
    named = report(DJANGO, False)
    named[DJANGO]["model_name_or_path"] = OPENAI
    own = tmp_path / "openai-own" / DJANGO
    own.mkdir(parents=True)
    (own / "report.json").write_text(json.dumps(named))
    page = post(predictions.read_bytes(), zipped(own.parent))
    assert "predictions.jsonl: line 1: instance_id: no report.json for this instance and model" in page
    assert "only under other models&#x27; folders: openai__gpt-4o-2024-05-13" in page
    assert not AgentRun.objects.exists()

    # One model's predictions alone: the folder of no model is unambiguous, and its report is taken.
    alone = predictions.read_bytes().splitlines(keepends=True)[0]
    post(alone, zipped(run_folder(reports)))
    assert [(r.model, r.passed) for r in AgentRun.objects.all()] == [(MODEL, True)]


def infra_failure_report(instance_id: str) -> dict[str, Any]:
    """What get_eval_report writes when the tests left no output it can parse and the logs match an
    environment signature (swebench.harness.infra_failure): no tests_status, resolved false."""
    return {
        instance_id: {
            "patch_is_None": False,
            "patch_exists": True,
            "patch_successfully_applied": False,
            "resolved": False,
            "infra_failure": True,
            "infra_failure_reason": "out_of_memory",
        }
    }


def test_an_infrastructure_failure_is_stored_not_measured(
    tmp_path: Path, harness_output: tuple[Path, Path]
) -> None:
    predictions, reports = harness_output
    (next(reports.rglob(f"{DJANGO}/report.json"))).write_text(json.dumps(infra_failure_report(DJANGO)))
    out = import_command(predictions, reports)
    assert "3 runs imported" in out and "1 run not measured (the harness's infrastructure failed)" in out
    assert (
        f"{predictions}: line 2: {DJANGO} ({MODEL}): not measured: the harness's infrastructure failed "
        "(out_of_memory)"
    ) in out
    django = AgentRun.objects.get(task__task_id=DJANGO)
    assert django.passed is None  # not a failing patch: nothing is known of it
    assert django.grade_json == {
        "pass": False,
        "patch_successfully_applied": False,
        "patch_is_None": False,
        "patch_exists": True,
        "infra_failure": True,
        "infra_failure_reason": "out_of_memory",
        "tests_status": {},
    }
    astropy = AgentRun.objects.get(task__task_id=ASTROPY)
    assert astropy.passed is True
    assert (astropy.grade_json["patch_is_None"], astropy.grade_json["patch_exists"]) == (False, True)


def test_a_harness_timeout_is_listed_not_evaluated_and_the_others_import(
    client: Client,
    maintainer: User,
    repository: Repository,
    tmp_path: Path,
    harness_output: tuple[Path, Path],
) -> None:
    """The tests outran --timeout: the harness logs an EvaluationError and writes no report.json. Nothing
    is known of that patch: it is left out and listed, and the other predictions are imported."""
    predictions, reports = harness_output
    folder = next(reports.rglob(f"{DJANGO}/report.json")).parent
    (folder / "report.json").unlink()
    log = f"logs/run_evaluation/my_eval/{MODEL}/{DJANGO}/run_instance.log"
    (folder / "run_instance.log").write_text(
        f"2024-06-20 10:00:01,000 - INFO - Container for {DJANGO} started: 4f2a9c\n"
        "2024-06-20 10:00:02,000 - INFO - >>>>> Applied Patch:\n"
        "Checking patch django/contrib/auth/validators.py...\n"
        "Applied patch django/contrib/auth/validators.py cleanly.\n"
        "2024-06-20 10:30:02,300 - INFO - Test runtime: 1_800.12 seconds\n"
        "2024-06-20 10:30:02,400 - INFO - Traceback (most recent call last):\n"
        '  File "swebench/harness/run_evaluation.py", line 360, in run_instance\n'
        "    raise EvaluationError(\n"
        f"swebench.harness.utils.EvaluationError: Error in evaluation for {DJANGO}: Test timed out after "
        f"1800 seconds.\nCheck ({log}) for more information.\n"
    )
    (folder / "test_output.txt").write_text(
        "+ ./tests/runtests.py\n\n\nTimeout error: 1800 seconds exceeded."
    )
    out = import_command(predictions, reports)
    assert "2 runs imported" in out and "1 prediction not evaluated by the harness, left out" in out
    assert (
        f"{predictions}: line 2: {DJANGO} ({MODEL}): not evaluated by the harness: Test timed out after 1800 "
        f"seconds ({reports}/{log})"
    ) in out
    assert {r.task.task_id for r in AgentRun.objects.select_related("task")} == {ASTROPY, SYMPY}
    assert "0 runs imported, 2 already there" in import_command(predictions, reports)

    # The upload says the same on the page it returns to.
    client.force_login(maintainer)
    response = upload(client, repository, predictions, reports, "1", follow=True)
    page = response.content.decode()
    assert "1 prediction not evaluated by the harness, left out" in page
    assert (
        f"predictions.jsonl: line 2: {DJANGO} ({MODEL}): not evaluated by the harness: Test timed out after "
        f"1800 seconds (reports.zip/{log})"
    ) in page
    assert AgentRun.objects.filter(repetition=1).count() == 2


def test_json_prediction_files_are_read_as_the_harness_reads_them(
    client: Client,
    maintainer: User,
    repository: Repository,
    harness_output: tuple[Path, Path],
    tmp_path: Path,
) -> None:
    """A .json file is one document: a list of predictions, or SWE-agent's preds.json (an object of them by
    instance id, whose values the harness takes)."""
    _, reports = harness_output
    lines = [
        {"model_name_or_path": MODEL, "instance_id": ASTROPY, "model_patch": PATCH},
        {"model_name_or_path": MODEL, "instance_id": DJANGO, "model_patch": DJANGO_PATCH},
        {"model_name_or_path": MODEL, "instance_id": SYMPY, "model_patch": ""},
    ]
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({line["instance_id"]: line for line in lines}, indent=4))
    assert "3 runs imported" in import_command(preds, reports)
    runs = {r.task.task_id: r for r in AgentRun.objects.select_related("task")}
    assert (runs[ASTROPY].source, runs[ASTROPY].passed) == (f"{preds}/item-1", True)
    assert (runs[DJANGO].passed, runs[SYMPY].passed) == (False, False)

    as_list = tmp_path / "all_preds.json"
    as_list.write_text(json.dumps(lines))
    assert "0 runs imported, 3 already there" in import_command(as_list, reports)
    as_list.write_text(json.dumps([lines[0], {"instance_id": DJANGO, "model_patch": 7}, "x"]))
    err = failing_command(as_list, reports)
    assert f"{as_list}: item 2: model_name_or_path: required: a non-empty string" in err
    assert f"{as_list}: item 2: model_patch: a string (the diff) or null" in err
    assert f"{as_list}: item 3: a prediction is a JSON object" in err
    as_list.write_text('"not predictions"')
    assert "a list of predictions, or an object of them by instance_id" in failing_command(as_list, reports)

    # The upload reads it by its name the same way.
    client.force_login(maintainer)
    response = upload(client, repository, preds, reports, "1", name="preds.json")
    assert response.status_code == 302
    assert AgentRun.objects.filter(repetition=1, source="preds.json/item-2", passed=False).exists()


def experiments_submission(root: Path, name: str, model: str, resolved: dict[str, bool]) -> Path:
    """evaluation/lite/SUBMISSION as SWE-bench/experiments keeps one: all_preds.jsonl, metadata.yaml,
    results/results.json and logs/INSTANCE/ with the harness's files, no model folder."""
    submission = root / "evaluation" / "lite" / name
    (submission / "results").mkdir(parents=True)
    write_predictions(
        submission / "all_preds.jsonl",
        [
            {"instance_id": ASTROPY, "model_name_or_path": model, "model_patch": PATCH},
            {"instance_id": DJANGO, "model_name_or_path": model, "model_patch": DJANGO_PATCH},
        ],
    )
    (submission / "metadata.yaml").write_text(f"name: {name}\noss: true\nverified: false\n")
    (submission / "results" / "results.json").write_text(
        json.dumps(
            {"resolved": sorted(i for i, r in resolved.items() if r), "no_generation": [], "no_logs": []}
        )
    )
    for instance_id, passed in resolved.items():
        logs = submission / "logs" / instance_id
        logs.mkdir(parents=True)
        (logs / "patch.diff").write_text(PATCH if instance_id == ASTROPY else DJANGO_PATCH)
        (logs / "report.json").write_text(json.dumps(report(instance_id, passed), indent=4))
        (logs / "run_instance.log").write_text(f"INFO - >>>>> Applied Patch:\nResult for {instance_id}\n")
        (logs / "test_output.txt").write_text(">>>>> Start Test Output\n")
    return submission


@pytest.mark.usefixtures("tasks")
def test_reports_at_an_experiments_submission_root(tmp_path: Path) -> None:
    """SWE-bench/experiments: evaluation/SPLIT/SUBMISSION/logs/INSTANCE/report.json, the submission's folder
    named by date and system, not by model_name_or_path. One model's predictions: its reports are taken."""
    submission = experiments_submission(
        tmp_path,
        "20240620_sweagent_claude3.5sonnet",
        "claude-3-5-sonnet-20240620",
        {ASTROPY: True, DJANGO: False},
    )
    assert "2 runs imported" in import_command(submission / "all_preds.jsonl", submission)
    assert {r.task.task_id: r.passed for r in AgentRun.objects.select_related("task")} == {
        ASTROPY: True,
        DJANGO: False,
    }

    # The split's folder holds two submissions' logs: which is this model's cannot be told.
    experiments_submission(tmp_path, "20240612_other_system", "gpt-4o", {ASTROPY: False, DJANGO: True})
    err = failing_command(submission / "all_preds.jsonl", submission.parent)
    assert (
        "reports lie in 2 folders of no model (20240612_other_system/logs, "
        "20240620_sweagent_claude3.5sonnet/logs)"
    ) in err

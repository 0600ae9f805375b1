"""Runs from the SWE-bench harness (rubrics_app/services/swe_bench.py): predictions.jsonl and the per-instance
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
        "nor a run_instance.log saying the patch did not apply"
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
    response = client.post(reverse("rubrics:runs_upload_swe_bench", args=[repository.pk]), {
        "predictions": SimpleUploadedFile("predictions.jsonl", predictions.read_bytes()),
        "reports": SimpleUploadedFile("reports.zip", zipped(reports)),
        "arm": "swe-agent", "repetition": "1",
    })  # fmt: skip
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
    response = client.post(reverse("rubrics:runs_upload_swe_bench", args=[repository.pk]), {
        "predictions": SimpleUploadedFile("predictions.jsonl", predictions.read_bytes()),
        "reports": SimpleUploadedFile("reports.zip", zipped(reports)),
        "arm": "swe-agent", "repetition": "0",
    }, follow=True)  # fmt: skip
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
    response = client.post(reverse("rubrics:runs_upload_swe_bench", args=[repository.pk]), {
        "predictions": SimpleUploadedFile("predictions.jsonl", good.read_bytes()),
        "reports": SimpleUploadedFile("reports.zip", zipped(reports)),
        "arm": "swe-agent", "repetition": "0",
    }, follow=True)  # fmt: skip
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

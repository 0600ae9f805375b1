"""Two members of an uploaded zip that name one path once normalised (``run1/run.json`` beside
``run1/./run.json``) are refused in every kind of zip, naming both: a reader would otherwise keep the later
one and store what the first said nothing of."""

from __future__ import annotations

import html
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from rubrics_app.models import AgentRun, Repository, RubricRevision, Task
from tests.app.conftest import CALIBRATION_FILES, rubric_data
from tests.app.runs_helpers import write_run

pytestmark = pytest.mark.django_db

SPELLINGS = ["{dir}/./{file}", "{dir}//{file}", "./{dir}/{file}"]


def make_zip(members: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members:
            archive.writestr(name, data)
    raw = buffer.getvalue()
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:  # the names stay as written, not normalised
        assert [i.filename for i in archive.infolist()] == [name for name, _ in members]
    return raw


def page_of(response: Any) -> str:
    assert response.status_code == 200
    return html.unescape(response.content.decode())


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_rubric_zip_with_two_members_of_one_path_is_refused(
    client: Client, maintainer: User, repository: Repository, spelling: str
) -> None:
    folder = "tasks/fix_fraction_gt1"
    second = spelling.format(dir=folder, file="rubric.json")
    members = [
        (f"{folder}/rubric.json", json.dumps(rubric_data(intent="What the reviewer read.")).encode()),
        *((f"{folder}/{path}", data) for path, data in CALIBRATION_FILES.items()),
        (second, json.dumps(rubric_data(intent="What the second file says instead.")).encode()),
    ]
    client.force_login(maintainer)
    url = reverse("rubrics:rubric_upload", args=[repository.pk])
    response = client.post(url, {"file": SimpleUploadedFile("rubrics.zip", make_zip(members))}, follow=True)
    page = page_of(response)
    assert "Nothing was imported." in page
    both = f"the same file as '{second}' (both name {folder}/rubric.json)"
    assert f"rubrics.zip: {folder}/rubric.json: {both}" in page
    assert not RubricRevision.objects.exists() and not Task.objects.exists()


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_run_zip_with_two_members_of_one_path_is_refused(
    client: Client, maintainer: User, repository: Repository, task: Task, tmp_path: Path, spelling: str
) -> None:
    run_dir = write_run(tmp_path, "run1")
    members = [(f"run1/{p.name}", p.read_bytes()) for p in sorted(run_dir.iterdir())]
    later = json.dumps({"task": task.task_id, "arm": "other-arm", "model": "model-a", "repetition": 0})
    second = spelling.format(dir="run1", file="run.json")
    members.append((second, later.encode()))
    client.force_login(maintainer)
    url = reverse("rubrics:runs_upload", args=[repository.pk])
    response = client.post(url, {"file": SimpleUploadedFile("runs.zip", make_zip(members))}, follow=True)
    page = page_of(response)
    assert "Nothing was imported." in page
    assert f"runs.zip: run1/run.json: the same file as '{second}' (both name run1/run.json)" in page
    assert not AgentRun.objects.exists()


def test_a_swe_bench_reports_zip_with_two_reports_of_one_path_is_refused(
    client: Client, maintainer: User, repository: Repository, task: Task
) -> None:
    instance = task.task_id
    folder = f"logs/run_evaluation/my_eval/model-a/{instance}"

    def report(resolved: bool) -> bytes:
        return json.dumps({instance: {"resolved": resolved, "patch_successfully_applied": True}}).encode()

    reports = make_zip([(f"{folder}/report.json", report(False)), (f"./{folder}/report.json", report(True))])
    patch = "diff --git a/x b/x\n"
    prediction = {"instance_id": instance, "model_name_or_path": "model-a", "model_patch": patch}
    client.force_login(maintainer)
    url = reverse("rubrics:runs_upload_swe_bench", args=[repository.pk])
    response = client.post(url, {
        "predictions": SimpleUploadedFile("predictions.jsonl", json.dumps(prediction).encode() + b"\n"),
        "reports": SimpleUploadedFile("reports.zip", reports),
        "arm": "swe-agent", "repetition": "0",
    }, follow=True)  # fmt: skip
    page = page_of(response)
    expected = f"reports.zip: {folder}/report.json: the same file as './{folder}/report.json'"
    assert expected in page
    assert not AgentRun.objects.exists()


def test_the_same_name_twice_is_still_named_once(
    client: Client, maintainer: User, repository: Repository
) -> None:
    rubric = json.dumps(rubric_data()).encode()
    members = [("tasks/x/rubric.json", rubric), ("tasks/x/rubric.json", rubric)]
    client.force_login(maintainer)
    url = reverse("rubrics:rubric_upload", args=[repository.pk])
    with pytest.warns(UserWarning, match="Duplicate name"):
        raw = make_zip(members)
    response = client.post(url, {"file": SimpleUploadedFile("rubrics.zip", raw)}, follow=True)
    assert "rubrics.zip: tasks/x/rubric.json: appears twice in the archive" in page_of(response)
    assert not RubricRevision.objects.exists()

"""A run's source (its folder or zip member as the user named it) is at most MAX_RUN_SOURCE characters on
every database: a longer one is a problem naming the run before anything is written (PostgreSQL's varchar
refused it with a DataError, SQLite stored it whole), and the schema refuses it too."""

from __future__ import annotations

import html
import io
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DataError, IntegrityError, transaction
from django.test import Client
from django.urls import reverse

from rubrics_app.models import MAX_RUN_SOURCE, AgentRun, Repository, Task
from tests.app.runs_helpers import write_run, zip_dir

pytestmark = pytest.mark.django_db


def upload_run_under(client: Client, repository: Repository, tmp_path: Path, folder: str) -> str:
    runs = tmp_path / "runs"
    write_run(runs, "run")
    raw = zip_dir(runs, f"{folder}/")  # the run's folder inside the zip: f"{folder}/run"
    url = reverse("rubrics:runs_upload", args=[repository.pk])
    response = client.post(url, {"file": SimpleUploadedFile("runs.zip", raw)}, follow=True)
    assert response.status_code == 200
    return html.unescape(response.content.decode())


@pytest.mark.parametrize("length", [MAX_RUN_SOURCE, MAX_RUN_SOURCE + 1])
def test_a_zipped_run_s_path_is_stored_whole_up_to_the_bound_and_refused_past_it(
    client: Client, maintainer: User, repository: Repository, task: Task, tmp_path: Path, length: int
) -> None:
    folder = "b" * (length - len("/run"))
    client.force_login(maintainer)
    page = upload_run_under(client, repository, tmp_path, folder)
    if length <= MAX_RUN_SOURCE:
        assert AgentRun.objects.get().source == f"{folder}/run"
    else:
        assert "Nothing was imported." in page
        too_long = f"the run's path is {length} characters; at most {MAX_RUN_SOURCE} can be stored"
        assert f"{folder}/run: {too_long}" in page
        assert not AgentRun.objects.exists()


def test_a_run_folder_s_path_past_the_bound_exits_2_naming_the_run(
    repository: Repository, task: Task, tmp_path: Path
) -> None:
    root = tmp_path / ("d" * 200) / ("e" * 200)
    run_dir = write_run(root, "f" * 150)
    assert len(str(run_dir)) > MAX_RUN_SOURCE
    err = io.StringIO()
    with pytest.raises(CommandError) as exc:
        call_command(
            "import_runs", str(root), "--repository", repository.name, stdout=io.StringIO(), stderr=err
        )
    assert exc.value.returncode == 2
    too_long = f"the run's path is {len(str(run_dir))} characters; at most {MAX_RUN_SOURCE} can be stored"
    assert err.getvalue().splitlines() == [f"{run_dir}: {too_long}"]
    assert not AgentRun.objects.exists()


def test_the_schema_refuses_a_longer_source_on_every_database(task: Task) -> None:
    fields = {"task": task, "passed": True, "diff_sha256": "0" * 64, "diff_bytes": 0}
    AgentRun.objects.create(**fields, repetition=0, source="s" * MAX_RUN_SOURCE)
    # PostgreSQL's varchar refuses it (DataError) before the check constraint does; on SQLite, the constraint.
    with pytest.raises((DataError, IntegrityError)), transaction.atomic():
        AgentRun.objects.create(**fields, repetition=1, source="s" * (MAX_RUN_SOURCE + 1))

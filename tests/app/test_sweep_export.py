"""A sweep's export (services/sweeps/export.py): asked for by `manage.py sweep --export FILE`, the sweep form
or the API's sweep start, written when the sweep job ends as the job's file (linked from the job page) and,
with --export FILE, to FILE; `rubric report` over the unpacked run folders is the app's report.

The job runs in this process, as CELERY_TASK_ALWAYS_EAGER runs it (the real worker is in
test_sweep_worker.py)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from rubrics_app import celery_app
from rubrics_app.models import JobFile, JobStatus, JudgeSetting, Repository, RubricRevision, Sweep
from tests.app.api_helpers import bearer, token_for
from tests.app.conftest import LAZY_DIFF, judge_answers
from tests.app.report_helpers import ROOT
from tests.app.runs_helpers import sha256_of
from tests.app.sweep_helpers import import_runs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]


@pytest.fixture
def swept(
    admitted_revision: RubricRevision, repository: Repository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Repository:
    """Runs in two arms (one lazy diff B1 fails, one run whose tests fail), a scripted judge, eager jobs."""
    cache.clear()
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
    import_runs(repository, tmp_path / "guidance", 3, lazy=(1,))
    import_runs(repository, tmp_path / "plain", 3, arm="plain", failing_tests=(2,))
    script = tmp_path / "judge.json"
    lazy = {sha256_of(LAZY_DIFF): judge_answers(("B1",))}
    script.write_text(json.dumps({"default": judge_answers(), "by_diff_sha256": lazy}))
    JudgeSetting.objects.filter(repository=repository).update(judge=f"scripted:{script}", second_judge="")
    return repository


def _rubric_report(zipped: bytes, folder: Path) -> dict[str, Any]:
    """`rubric report --json` over the export's run folders, with its tasks and labels."""
    with zipfile.ZipFile(io.BytesIO(zipped)) as archive:
        archive.extractall(folder)
    runs = sorted((folder / "runs").iterdir())
    done = subprocess.run(
        [sys.executable, "-m", "grading", "report", "--json", "--tasks", str(folder / "tasks"),
         "--labels", str(folder / "labels.json"), *map(str, runs)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _comparable(report: dict[str, Any]) -> dict[str, Any]:
    """Everything but when it was made and the runs' names (folders in the zip, folders imported)."""
    report = dict(report)
    report.pop("provenance")
    report["disagreements"] = sorted(
        ({k: v for k, v in d.items() if k != "run"} for d in report.pop("disagreements")), key=str
    )
    return report


def _app_report(user: User, repository: Repository, filters: dict[str, str]) -> dict[str, Any]:
    client = Client()
    client.force_login(user)
    response = client.get(reverse("rubrics:report_json", args=[repository.pk]), filters)
    assert response.status_code == 200
    data: dict[str, Any] = response.json()
    return data


def test_sweep_export_writes_the_runs_that_rubric_report_turns_into_the_apps_report(
    swept: Repository, viewer: User, outsider: User, tmp_path: Path
) -> None:
    target = tmp_path / "out" / "sweep.zip"
    target.parent.mkdir()
    out = io.StringIO()
    call_command("sweep", "--repository", swept.name, "--export", str(target), stdout=out)
    assert f"wrote {target}" in out.getvalue()
    sweep = Sweep.objects.select_related("job").get()
    assert sweep.export and sweep.job is not None and sweep.job.status == JobStatus.DONE
    made = JobFile.objects.get(job=sweep.job)
    assert (
        target.read_bytes() == bytes(made.data) and made.name == f"example-project-sweep-{sweep.pk}-runs.zip"
    )
    assert not list(target.parent.glob(".*"))  # written atomically: no staging file left beside it

    app = _app_report(viewer, swept, {})
    files = _rubric_report(target.read_bytes(), tmp_path / "unzipped")
    assert sum(c["runs"] for c in app["cells"]) == 6
    assert {c["arm"] for c in app["cells"]} == {"guidance", "plain"}
    assert _comparable(files) == _comparable(app)

    # The job page links the file; the link downloads it, to anyone who may see the job.
    client = Client()
    client.force_login(viewer)
    page = client.get(reverse("rubrics:job_detail", args=[swept.pk, sweep.job_id])).content.decode()
    link = reverse("rubrics:job_file", args=[swept.pk, sweep.job_id, made.pk])
    assert f'href="{link}"' in page and made.name in page
    # The sweep's page, where the sweep form sends whoever asked for the export, links it too.
    sweep_page = client.get(reverse("rubrics:sweep_detail", args=[swept.pk, sweep.pk])).content.decode()
    assert f'href="{link}"' in sweep_page
    download = client.get(link)
    assert download.status_code == 200 and download.content == target.read_bytes()
    assert download["Content-Disposition"] == f'attachment; filename="{made.name}"'
    stranger = Client()
    stranger.force_login(outsider)
    assert stranger.get(link).status_code == 404


def test_a_sweep_without_export_writes_none_and_a_bad_export_path_starts_nothing(
    swept: Repository, outsider: User, tmp_path: Path
) -> None:
    with pytest.raises(CommandError) as refused:
        call_command("sweep", "--repository", swept.name, "--export", str(tmp_path / "no" / "x.zip"))
    assert refused.value.returncode == 2 and "--export" in str(refused.value)
    assert not Sweep.objects.exists()
    call_command("sweep", "--repository", swept.name, "--wait", stdout=io.StringIO())
    sweep = Sweep.objects.get()
    assert not sweep.export and not JobFile.objects.exists()
    page = Client()
    page.force_login(outsider)
    assert page.get(reverse("rubrics:job_detail", args=[swept.pk, sweep.job_id])).status_code == 404


def test_the_sweep_form_asks_for_an_export(swept: Repository, maintainer: User, viewer: User) -> None:
    client = Client()
    client.force_login(maintainer)
    response = client.post(
        reverse("rubrics:sweep_start", args=[swept.pk]), {"arm": "guidance", "export": "1"}
    )
    assert response.status_code == 302
    sweep = Sweep.objects.get()
    assert sweep.export and sweep.arm == "guidance"
    made = JobFile.objects.get(job_id=sweep.job_id)
    with zipfile.ZipFile(io.BytesIO(bytes(made.data))) as archive:
        assert sum(1 for n in archive.namelist() if n.endswith("/metrics.json")) == 3
        assert json.loads(archive.read("provenance.json"))["filters"] == {"arm": "guidance"}


def test_the_apis_sweep_start_asks_for_an_export_and_serves_it_when_done(
    swept: Repository, maintainer: User, viewer: User, tmp_path: Path
) -> None:
    secret = token_for(maintainer, swept)
    response = Client().post(
        "/api/v1/repositories/example-project/sweeps",
        json.dumps({"arm": "plain", "export": True}),
        content_type="application/json",
        headers=bearer(secret),
    )
    assert response.status_code == 201, response.content
    sweep_id = response.json()["id"]
    status = Client().get(f"/api/v1/repositories/example-project/sweeps/{sweep_id}", headers=bearer(secret))
    assert status.json()["export"] is True and status.json()["export_ready"] is True
    export = Client().get(
        f"/api/v1/repositories/example-project/sweeps/{sweep_id}/export", headers=bearer(secret)
    )
    assert export.status_code == 200 and export["Content-Type"] == "application/zip"
    files = _rubric_report(export.content, tmp_path / "api")
    assert _comparable(files) == _comparable(_app_report(viewer, swept, {"arm": "plain"}))
    assert sum(c["runs"] for c in files["cells"]) == 3

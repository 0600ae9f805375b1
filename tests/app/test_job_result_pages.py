"""The job and sweep pages read ``Job.result`` through the model of the job's kind (``RESULT_MODELS``), field
by field: every field of every kind's result is on the job page, and every field a template names is one
of its model's, so a renamed field fails here rather than leaving a blank on the page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils.html import escape
from pydantic import BaseModel

from grading.judge.cache import MemoryCache
from rubrics_app.access import Actor
from rubrics_app.models import (
    RESULT_MODELS,
    CalibrationResult,
    DraftResult,
    EvidenceChangeLine,
    EvidenceCheckResult,
    ExportResult,
    FieldProblem,
    Job,
    JobKind,
    JobResult,
    JobStatus,
    Repository,
    RubricRevision,
    SweepResult,
    ValidationResult,
)
from rubrics_app.models.jobs import result_json
from rubrics_app.services.sweeps import run as sweeps
from tests.app.sweep_helpers import import_runs

pytestmark = pytest.mark.django_db

# One result of each kind but the export (its own sentences, below), every field set apart from the others.
SHOWN_BY_FIELD: dict[str, JobResult] = {
    JobKind.VALIDATE_REVISION: ValidationResult(
        valid=False, errors=[FieldProblem(path="items[2].text", message="too short", field="text")]
    ),
    JobKind.CHECK_EVIDENCE: EvidenceCheckResult(
        head="4f1d2e3c",
        open=3,
        new=2,
        changes=[
            EvidenceChangeLine(task="t-9", revision=6, item="B4", cite="src/a.py:7", old="x = 1", new=None)
        ],
        notes=["src/gone.py:3: the file is gone"],
    ),
    JobKind.CALIBRATE_REVISION: CalibrationResult(
        calibration=41, status="passed", admitted=True, calls=17, cost_usd=0.125
    ),
    JobKind.SWEEP: SweepResult(
        sweep=5,
        total=23,
        graded=19,
        already_graded=4,
        judge_failures=2,
        no_revision=1,
        calls=38,
        cost_usd=1.5,
        provisional=False,
        problems=["runs/r9/grade.json: pass: required"],
    ),
    JobKind.DRAFT_RUBRIC: DraftResult(
        draft=8,
        revision=9,
        revision_number=3,
        model_id="model-x",
        problems=12,
        cost_usd=0.75,
        cost_known=True,
    ),
}


def finished(repository: Repository, kind: str, result: JobResult) -> Job:
    return Job.objects.create(
        kind=kind, status=JobStatus.DONE, repository=repository, result=result_json(kind, result)
    )


def job_page(client: Client, user: User, job: Job) -> str:
    client.force_login(user)
    response = client.get(reverse("rubrics:job_detail", args=[job.repository_id, job.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_every_kind_has_a_result_on_the_job_page() -> None:
    assert set(SHOWN_BY_FIELD) | {JobKind.EXPORT_REVISION} == set(RESULT_MODELS)
    assert all(type(result) is RESULT_MODELS[kind] for kind, result in SHOWN_BY_FIELD.items())


@pytest.mark.parametrize("kind", sorted(SHOWN_BY_FIELD))
def test_the_job_page_shows_each_field_of_the_kind_s_result(
    kind: str, client: Client, maintainer: User, repository: Repository
) -> None:
    result = SHOWN_BY_FIELD[kind]
    page = job_page(client, maintainer, finished(repository, kind, result))
    for name in type(result).model_fields:
        value = getattr(result, name)
        if isinstance(value, list):  # one item a line, each nested record by its fields: never a repr
            assert f"<dt>{name}</dt><dd><ul" in page, name
            for item in value:
                shown = str(item) if not isinstance(item, BaseModel) else None
                for part in [shown] if shown is not None else [str(v) for v in item.model_dump().values()]:
                    assert escape(part if part != "None" else "none") in page, (name, part)
            assert not value or f"{type(value[0]).__name__}(" not in page
        else:
            assert f"<dt>{name}</dt><dd>{escape(value)}</dd>" in page, (name, value)


def test_the_job_page_tells_what_an_export_wrote_and_committed(
    client: Client, maintainer: User, repository: Repository
) -> None:
    commit = "0123456789abcdef0123456789abcdef01234567"
    written = ExportResult(root="/srv/checkout", paths=["tasks/t1/rubric.json", "tasks/t2/rubric.json"],
                           branch=None, commit=None)  # fmt: skip
    page = job_page(client, maintainer, finished(repository, JobKind.EXPORT_REVISION, written))
    assert "Wrote tasks/t1/rubric.json, tasks/t2/rubric.json under /srv/checkout." in page
    committed = written.model_copy(update={"branch": "rubrics/t1-r3", "commit": commit})
    page = job_page(client, maintainer, finished(repository, JobKind.EXPORT_REVISION, committed))
    branch = "Committed on the new branch <code>rubrics/t1-r3</code> as <code>0123456789ab</code>"
    assert f"{branch} in /srv/checkout: tasks/t1/rubric.json, tasks/t2/rubric.json." in page
    assert "<code>git switch rubrics/t1-r3</code>" in page


@pytest.mark.parametrize(
    ("template", "model"),
    [("rubrics/job_detail.html", ExportResult), ("rubrics/sweep_detail.html", SweepResult)],
)
def test_every_result_field_a_template_reads_is_one_of_its_model_s(
    template: str, model: type[JobResult]
) -> None:
    text = (Path(settings.BASE_DIR) / "templates" / template).read_text()
    assert "job.result" not in text  # the views hand the template the typed result
    read = set(re.findall(r"\bresult\.(\w+)", text))
    assert read and read <= set(model.model_fields), read - set(model.model_fields)


def test_the_sweep_page_reads_its_result_by_field(
    client: Client,
    maintainer: User,
    repository: Repository,
    admitted_revision: RubricRevision,
    tmp_path: Path,
) -> None:
    import_runs(repository, tmp_path / "runs", 2)
    done = sweeps.sweep_now(repository, Actor.member(maintainer), cache=MemoryCache())
    result = done.job.result_as(SweepResult)
    assert result is not None
    problem = "runs/r9/grade.json: pass: required"
    changed = result.model_copy(update={"already_graded": 1, "problems": [problem]})
    Job.objects.filter(pk=done.job_id).update(result=result_json(JobKind.SWEEP, changed))
    client.force_login(maintainer)
    page = client.get(reverse("rubrics:sweep_detail", args=[repository.pk, done.pk])).content.decode()
    text = " ".join(page.split())
    assert "Every run is graded (1 already were, with this rubric and judge)." in text
    assert f'<ul class="errors"><li>{problem}</li></ul>' in text

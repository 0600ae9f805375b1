"""Upload of a rubric.json or a zip of task directories: all or nothing, unsafe archives refused."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from rubrics_app.models import Repository, RevisionStatus, RubricRevision, Task
from tests.app.conftest import CALIBRATION_FILES, rubric_data

HX = {"HX-Request": "true"}


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def make_zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def task_zip(task_id: str = "fix_fraction_gt1", **changes: Any) -> bytes:
    rubric = json.dumps(rubric_data(task=task_id, **changes)).encode()
    members = {f"tasks/{task_id}/rubric.json": rubric}
    members.update({f"tasks/{task_id}/{path}": data for path, data in CALIBRATION_FILES.items()})
    return make_zip(members)


def upload(client: Client, repository: Repository, data: bytes, name: str = "rubrics.zip", **kw: Any) -> Any:
    url = reverse("rubrics:rubric_upload", args=[repository.pk])
    return client.post(url, {"file": SimpleUploadedFile(name, data)}, **kw)


def test_a_zip_becomes_a_draft_and_the_browser_goes_to_it(maintainer: User, repository: Repository) -> None:
    response = upload(logged_in(maintainer), repository, task_zip(), headers=HX)
    revision = RubricRevision.objects.get(task__repository=repository)
    assert response.status_code == 200
    assert response["HX-Redirect"].endswith(f"/revisions/{revision.pk}/")
    assert revision.status == RevisionStatus.DRAFT
    assert revision.calibration_diffs.count() == 2
    assert sorted(revision.items.values_list("item_id", flat=True)) == ["B1", "B2", "N1", "N2", "N3"]


def test_a_plain_upload_redirects(maintainer: User, repository: Repository) -> None:
    response = upload(logged_in(maintainer), repository, task_zip())
    assert response.status_code == 302 and "/revisions/" in response["Location"]


def test_a_zip_of_two_tasks_imports_both(maintainer: User, repository: Repository) -> None:
    members = {}
    for task_id in ("task_a", "task_b"):
        members[f"tasks/{task_id}/rubric.json"] = json.dumps(rubric_data(task=task_id)).encode()
        members.update({f"tasks/{task_id}/{p}": d for p, d in CALIBRATION_FILES.items()})
    response = upload(logged_in(maintainer), repository, make_zip(members))
    assert response["Location"] == reverse("rubrics:repository_detail", args=[repository.pk])
    assert sorted(Task.objects.values_list("task_id", flat=True)) == ["task_a", "task_b"]


def test_an_invalid_rubric_lists_its_errors_and_imports_nothing(
    maintainer: User, repository: Repository
) -> None:
    members = {
        "tasks/good/rubric.json": json.dumps(rubric_data(task="good")).encode(),
        "tasks/bad/rubric.json": json.dumps(rubric_data(task="bad", intent="", blockers=[])).encode(),
    }
    for task_id in ("good", "bad"):
        members.update({f"tasks/{task_id}/{p}": d for p, d in CALIBRATION_FILES.items()})
    response = upload(logged_in(maintainer), repository, make_zip(members), headers=HX)
    html = response.content.decode()
    assert response.status_code == 200
    assert html.strip().startswith('<form id="upload-form"')  # just the form, under htmx
    assert "Nothing was imported." in html
    assert "tasks/bad/rubric.json" in html and "intent" in html and "blockers" in html
    assert not RubricRevision.objects.exists() and not Task.objects.exists()


@pytest.mark.parametrize(
    ("member", "problem"),
    [
        ("../../etc/cron.d/evil", "path leaves the archive"),
        ("tasks/x/../../../evil.diff", "path leaves the archive"),
        ("/etc/passwd", "absolute path"),
        ("C:/Windows/evil", "absolute path"),
    ],
)
def test_a_traversal_attempt_is_a_form_error(
    maintainer: User, repository: Repository, member: str, problem: str
) -> None:
    members = {
        "tasks/fix_fraction_gt1/rubric.json": json.dumps(rubric_data()).encode(),
        **{f"tasks/fix_fraction_gt1/{p}": d for p, d in CALIBRATION_FILES.items()},
        member: b"owned",
    }
    response = upload(logged_in(maintainer), repository, make_zip(members), follow=True)
    html = response.content.decode()
    assert response.status_code == 200
    assert "Nothing was imported." in html and problem in html
    assert not RubricRevision.objects.exists()


def test_a_bare_rubric_json_is_imported(maintainer: User, repository: Repository) -> None:
    data = rubric_data(calibration={})
    upload(logged_in(maintainer), repository, json.dumps(data).encode(), name="rubric.json")
    assert RubricRevision.objects.get().task.task_id == "fix_fraction_gt1"


def test_malformed_json_is_named_with_its_line(maintainer: User, repository: Repository) -> None:
    response = upload(
        logged_in(maintainer),
        repository,
        b'{"schema": "repo_rubric.v1",\n  oops}',
        name="r.json",
        follow=True,
    )
    html = response.content.decode()
    assert "r.json" in html and "line 2" in html
    assert not RubricRevision.objects.exists()


def test_a_file_over_the_limit_is_refused(maintainer: User, repository: Repository, settings: Any) -> None:
    settings.RUBRIC_UPLOAD_MAX_BYTES = 100
    response = upload(logged_in(maintainer), repository, task_zip(), follow=True)
    assert response.status_code == 200
    assert "larger than" in response.content.decode()
    assert not RubricRevision.objects.exists()


def test_an_empty_form_is_an_error(maintainer: User, repository: Repository) -> None:
    url = reverse("rubrics:rubric_upload", args=[repository.pk])
    response = logged_in(maintainer).post(url, {}, follow=True)
    assert response.status_code == 200 and "This field is required." in response.content.decode()


def test_only_maintainers_import(
    reviewer: User, viewer: User, outsider: User, repository: Repository
) -> None:
    assert upload(logged_in(reviewer), repository, task_zip()).status_code == 403
    assert upload(logged_in(viewer), repository, task_zip(), headers=HX).status_code == 403
    assert upload(logged_in(outsider), repository, task_zip(), headers=HX).status_code == 404
    assert not RubricRevision.objects.exists()


@pytest.mark.parametrize(
    ("intent", "problem"),
    [
        ("bad \ud800 text", "intent: a lone surrogate escape"),
        ("bad \x00 text", "intent: holds a NUL character"),
    ],
)
def test_text_the_database_cannot_store_is_a_form_error(
    maintainer: User, repository: Repository, intent: str, problem: str
) -> None:
    client = Client(raise_request_exception=False)
    client.force_login(maintainer)
    for headers in ({}, HX):
        response = upload(client, repository, task_zip(intent=intent), headers=headers, follow=True)
        html = response.content.decode()
        assert response.status_code == 200
        assert f"tasks/fix_fraction_gt1/rubric.json: {problem}" in html
    assert not RubricRevision.objects.exists() and not Task.objects.exists()

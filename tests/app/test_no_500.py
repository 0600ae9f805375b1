"""Hostile request values get a 404, a 400 or a form error, never a 500; and web imports read JSON with
grading's strict reader (duplicate keys, NaN, 1e400 and 5,000-digit integers refused, as `rubric validate`
refuses them)."""

from __future__ import annotations

import html
import io
import json
import zipfile
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from rubrics_app.models import Repository, ReviewState, RubricItem, RubricRevision, Task
from tests.app.client_helpers import HX
from tests.app.conftest import CALIBRATION_FILES, rubric_data

# '²' passes str.isdigit and fails int(); 5,000 digits fail int(); 30 digits overflow a 64-bit column.
HOSTILE_NUMBERS = ["²", "9" * 5000, "9" * 30, "-1", "1e400", "NaN", " 1", "x"]


def logged_in(user: User) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def item_url(name: str, item: RubricItem) -> str:
    return reverse(f"rubrics:{name}", args=[item.revision.task.repository_id, item.pk])


@pytest.mark.parametrize("other", HOSTILE_NUMBERS)
def test_compare_with_a_hostile_other_is_not_found(
    viewer: User, draft_revision: RubricRevision, other: str
) -> None:
    url = reverse("rubrics:revision_compare", args=[draft_revision.task.repository_id, draft_revision.pk])
    assert logged_in(viewer).get(url, {"other": other}).status_code == 404


@pytest.mark.parametrize("version", [*HOSTILE_NUMBERS, ""])
@pytest.mark.parametrize("headers", [{}, HX])
def test_approving_with_a_hostile_version_is_refused(
    maintainer: User, draft_revision: RubricRevision, version: str, headers: dict[str, str]
) -> None:
    item = draft_revision.items.get(item_id="B1")
    response = logged_in(maintainer).post(
        item_url("item_approve", item), {"version": version}, headers=headers
    )
    assert response.status_code in (200, 302)  # the row with a notice under htmx; the page otherwise
    item.refresh_from_db()
    assert item.review_state == ReviewState.PENDING


def test_approving_without_a_version_is_refused(maintainer: User, draft_revision: RubricRevision) -> None:
    # It would approve whatever text is stored now, which the maintainer may never have seen.
    item = draft_revision.items.get(item_id="B1")
    response = logged_in(maintainer).post(item_url("item_approve", item), headers=HX)
    assert "this approval did not say which text" in response.content.decode()
    item.refresh_from_db()
    assert item.review_state == ReviewState.PENDING
    response = logged_in(maintainer).post(item_url("item_approve", item), {"version": item.version})
    item.refresh_from_db()
    assert item.review_state == ReviewState.APPROVED


@pytest.mark.parametrize("version", [v for v in HOSTILE_NUMBERS if v != " 1"])  # " 1" is a fine 1
def test_editing_with_a_hostile_version_is_a_form_error(
    maintainer: User, draft_revision: RubricRevision, version: str
) -> None:
    item = draft_revision.items.get(item_id="B1")
    data = {"version": version, "item_id": "B1", "criterion": "changed", "rationale": "", "evidence": "e"}
    assert logged_in(maintainer).post(item_url("item_edit", item), data).status_code == 400
    revision_url = reverse(
        "rubrics:revision_edit", args=[draft_revision.task.repository_id, draft_revision.pk]
    )
    data = {"version": version, "intent": "changed", "allowed_globs": "src/**", "lazy_solution": "l"}
    data["alt_valid_solution"] = "a"
    response = logged_in(maintainer).post(revision_url, data)
    assert response.status_code == 200  # the page, with the form and its errors
    assert "version" in response.context["revision_form"].errors
    assert RubricItem.objects.get(pk=item.pk).criterion == item.criterion
    assert RubricRevision.objects.get(pk=draft_revision.pk).intent == draft_revision.intent


# --- imports ------------------------------------------------------------------------------------------------

TASK_DIR = "tasks/fix_fraction_gt1/"


def upload(client: Client, repository: Repository, members: dict[str, bytes], follow: bool = False) -> Any:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in {**members, **{TASK_DIR + p: d for p, d in CALIBRATION_FILES.items()}}.items():
            archive.writestr(name, data)
    url = reverse("rubrics:rubric_upload", args=[repository.pk])
    return client.post(url, {"file": SimpleUploadedFile("rubrics.zip", buffer.getvalue())}, follow=follow)


def rubric_json(**changes: Any) -> bytes:
    return json.dumps(rubric_data(**changes)).encode()


def with_weight(text: str) -> bytes:
    raw = rubric_json().decode()
    return raw.replace('"weight": 2', f'"weight": {text}').encode()


@pytest.mark.parametrize(
    ("rubric", "problem"),
    [
        # The last "intent" used to win silently.
        (rubric_json()[:-1] + b', "intent": "the other intent"}', "duplicate key 'intent' in one object"),
        (with_weight("1" + "0" * 5000), "number 100000000000...(5001 chars) is out of range"),
        (with_weight("1e400"), "number 1e400 is out of range (a JSON number must fit a double)"),
        (with_weight("NaN"), "NaN is not valid JSON"),
        (with_weight("-Infinity"), "-Infinity is not valid JSON"),
    ],
)
def test_an_import_of_a_hostile_rubric_json_is_a_form_error(
    maintainer: User, repository: Repository, rubric: bytes, problem: str
) -> None:
    response = upload(logged_in(maintainer), repository, {TASK_DIR + "rubric.json": rubric}, follow=True)
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert (
        f"{TASK_DIR}rubric.json: malformed JSON: {problem}" in page
        or f"{TASK_DIR}rubric.json: {problem}" in page
    )
    assert not RubricRevision.objects.exists()


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("NaN", "NaN is not valid JSON"),
        ("1e400", "number 1e400 is out of range (a JSON number must fit a double)"),
        ("9" * 5000, "number 999999999999...(5000 chars) is out of range"),
    ],
)
def test_an_import_of_a_hostile_task_json_is_a_form_error(
    maintainer: User, repository: Repository, value: str, problem: str
) -> None:
    task_json = f'{{"id": "fix_fraction_gt1", "prompt": "p", "timeout": {value}}}'.encode()
    members = {TASK_DIR + "rubric.json": rubric_json(), TASK_DIR + "task.json": task_json}
    response = upload(logged_in(maintainer), repository, members, follow=True)
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert (
        f"{TASK_DIR}task.json: malformed JSON: {problem}" in page or f"{TASK_DIR}task.json: {problem}" in page
    )
    assert not Task.objects.exists()


def test_a_large_but_finite_task_json_number_is_kept(maintainer: User, repository: Repository) -> None:
    task_json = b'{"id": "fix_fraction_gt1", "prompt": "p", "timeout": 1e300, "seed": ' + b"9" * 40 + b"}"
    members = {TASK_DIR + "rubric.json": rubric_json(), TASK_DIR + "task.json": task_json}
    assert upload(logged_in(maintainer), repository, members).status_code == 302
    task = Task.objects.get()
    # PostgreSQL's jsonb gives 1e300 back as the integer it equals.
    assert float(task.extra["timeout"]) == 1e300 and task.extra["seed"] == int("9" * 40)

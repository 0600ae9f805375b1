"""Every page and partial against every role: the one access helper decides, the same way everywhere."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from rubrics_app.models import RevisionStatus, RubricRevision
from tests.app.client_helpers import HX
from tests.app.conftest import MakeRevision

ROLES = ["maintainer", "reviewer", "viewer", "outsider"]


@pytest.fixture
def objects(make_revision: MakeRevision) -> dict[str, Any]:
    draft = make_revision()
    admitted = make_revision(RevisionStatus.ADMITTED)
    return {
        "repo": draft.task.repository_id,
        "task": draft.task_id,
        "draft": draft,
        "admitted": admitted,
        "item": draft.items.get(item_id="B1"),
        "diff": draft.calibration_diffs.get(path="calib/lazy.diff"),
    }


def _pages(o: dict[str, Any]) -> list[tuple[str, list[Any]]]:
    repo, draft = o["repo"], o["draft"].pk
    return [
        ("repository_detail", [repo]),
        ("task_detail", [repo, o["task"]]),
        ("revision_detail", [repo, draft]),
        ("revision_fields", [repo, draft]),
        ("revision_compare", [repo, draft]),
        ("calibration_diff", [repo, draft, o["diff"].pk]),
        ("item_row", [repo, o["item"].pk]),
    ]


@pytest.mark.parametrize("role", ROLES)
def test_reading_pages_and_partials(
    request: pytest.FixtureRequest, objects: dict[str, Any], role: str
) -> None:
    client = Client()
    client.force_login(request.getfixturevalue(role))
    for name, args in _pages(objects):
        page = reverse(f"rubrics:{name}", args=args)
        for headers in ({}, HX):
            status = client.get(page, headers=headers).status_code
            if role == "outsider":
                assert status == 404, (name, headers)
            else:
                # item_row without htmx sends the browser to the page, at the row
                assert status in ((302, 200) if name == "item_row" else (200,)), (name, headers, status)


# (url name, object key, method, the lowest role allowed)
ACTIONS = [
    ("revision_edit", "draft", "get", "maintainer"),
    ("item_edit", "item", "get", "maintainer"),
    ("item_approve", "item", "post", "maintainer"),
    ("item_request_changes", "item", "post", "maintainer"),
    ("item_comment", "item", "post", "reviewer"),
    ("revision_new_draft", "admitted", "post", "maintainer"),
    ("revision_admit", "admitted", "post", "maintainer"),
    ("revision_approve", "draft", "post", "maintainer"),
    ("export_json", "admitted", "get", "viewer"),
    ("export_zip", "admitted", "get", "maintainer"),
    ("rubric_upload", None, "post", "maintainer"),
]
RANK = {"viewer": 0, "reviewer": 1, "maintainer": 2}


@pytest.mark.parametrize(("name", "key", "method", "lowest"), ACTIONS)
@pytest.mark.parametrize("role", ["reviewer", "viewer", "outsider"])
def test_actions_refuse_lower_roles_and_hide_from_outsiders(
    request: pytest.FixtureRequest,
    objects: dict[str, Any],
    role: str,
    name: str,
    key: str | None,
    method: str,
    lowest: str,
) -> None:
    client = Client()
    client.force_login(request.getfixturevalue(role))
    target = objects[key] if key else None
    args = [objects["repo"]] + ([target.pk] if target is not None else [])
    page = reverse(f"rubrics:{name}", args=args)
    expected = 404 if role == "outsider" else (403 if RANK[role] < RANK[lowest] else None)
    for headers in ({}, HX):
        status = getattr(client, method)(page, {"text": "a comment"}, headers=headers).status_code
        if expected is None:
            assert status in (200, 302), (name, role, status)
        else:
            assert status == expected, (name, role, headers, status)


def test_an_outsider_who_maintains_another_repository_gets_nothing_here(
    outsider: User, other_repository: Any, objects: dict[str, Any]
) -> None:
    # The repository in the URL is theirs, the revision is not: still 404, never the other repository's data.
    client = Client()
    client.force_login(outsider)
    draft: RubricRevision = objects["draft"]
    page = reverse("rubrics:revision_detail", args=[other_repository.pk, draft.pk])
    assert client.get(page).status_code == 404
    item_page = reverse("rubrics:item_row", args=[other_repository.pk, objects["item"].pk])
    assert client.get(item_page, headers=HX).status_code == 404


@pytest.mark.parametrize("name", ["repository_detail", "revision_detail", "item_row"])
def test_an_id_too_large_for_the_database_is_not_found(maintainer: User, name: str) -> None:
    # Django's URL converter takes any number of digits; a foreign-key lookup with one past the column's
    # range raised OverflowError on SQLite (a 500) before the access helper checked the range.
    client = Client(raise_request_exception=False)
    client.force_login(maintainer)
    huge = 10**30
    args = [huge] if name == "repository_detail" else [huge, 1]
    for headers in ({}, HX):
        assert client.get(reverse(f"rubrics:{name}", args=args), headers=headers).status_code == 404

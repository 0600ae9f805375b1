"""Odd input from a request is a plain answer, never a 500: numbers are ASCII digits only ('²' passes
``str.isdigit`` and fails ``int``), and a label carries exactly one verdict."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from rubrics_app.models import HumanVerdict, Repository, RubricRevision, RunGrade
from tests.app.client_helpers import logged_in
from tests.app.runs_helpers import import_graded

pytestmark = pytest.mark.django_db


@pytest.fixture
def graded(tmp_path: Path, repository: Repository, admitted_revision: RubricRevision) -> RubricRevision:
    import_graded(tmp_path, repository, admitted_revision)
    return admitted_revision


@pytest.mark.parametrize("page", ["²", "١", "99999999999999999999", "-1", "2x"])
def test_an_odd_queue_page_is_the_first_page(
    reviewer: User, repository: Repository, graded: RubricRevision, page: str
) -> None:
    response = logged_in(reviewer).get(reverse("rubrics:queue", args=[repository.pk]), {"page": page})
    assert response.status_code == 200 and "0 of 4 reviewed" in response.content.decode()


@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize("name", ["comment", "grade"])
def test_an_odd_comment_or_grade_on_the_dispute_page_is_ignored(
    maintainer: User, repository: Repository, graded: RubricRevision, method: str, name: str
) -> None:
    b1 = graded.items.get(item_id="B1")
    url = reverse("rubrics:item_dispute", args=[repository.pk, b1.pk])
    response = getattr(logged_in(maintainer), method)(url, {name: "²", "reason": "  "})
    assert response.status_code in (200, 400)  # the form (a blank reason is its error), not a 500


def test_a_label_with_two_verdicts_is_refused(
    reviewer: User, repository: Repository, graded: RubricRevision
) -> None:
    grade = RunGrade.objects.order_by("run__repetition").first()
    assert grade is not None
    url = reverse("rubrics:queue_label", args=[repository.pk, grade.pk, "B1"])
    response = logged_in(reviewer).post(url, {"verdict": ["pass", "fail"]})
    assert response.status_code == 400 and b"one verdict per label" in response.content
    assert not HumanVerdict.objects.exists()
    assert logged_in(reviewer).post(url, {"verdict": "pass"}).status_code == 302
    assert HumanVerdict.objects.count() == 1

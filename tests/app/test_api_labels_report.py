"""The API's labels (listed as the queue page's labels download writes them, by cursor and filters; added
through the queue's service with its role rules, capped by the token) and the report's runs and items rows
(the report page's downloads, as JSON or as the JSONL and CSV files themselves)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from grading import ItemRow, LabelRow, RunRow, read_label_rows, read_rows
from rubrics_app.models import HumanVerdict, Membership, Repository, Role, RunGrade
from tests.app.api_helpers import bearer, token_for
from tests.app.report_helpers import build_runs, label_runs

PROBLEM = "application/problem+json"
API = "/api/v1/repositories/example-project"


@pytest.fixture
def graded(tmp_path: Path, repository: Repository) -> Repository:
    build_runs(tmp_path, repository)
    label_runs(repository)
    return repository


def _page_download(user: User, name: str, *args: Any, query: dict[str, str] | None = None) -> str:
    client = Client()
    client.force_login(user)
    response: Any = client.get(reverse(f"rubrics:{name}", args=list(args)), query or {})
    assert response.status_code == 200
    return b"".join(response.streaming_content).decode()


def _all_labels(secret: str, limit: int, **filters: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    cursor = ""
    while True:
        response = Client().get(
            f"{API}/labels", {**filters, "limit": str(limit), "cursor": cursor}, headers=bearer(secret)
        )
        assert response.status_code == 200, response.content
        page = response.json()
        rows += page["items"]
        if page["next_cursor"] is None:
            return rows
        cursor = page["next_cursor"]


def _sorted(rows: list[LabelRow]) -> list[LabelRow]:
    return sorted(rows, key=lambda r: (r.run, r.item, r.reviewer, r.adjudicated, r.time))


def test_the_labels_list_pages_the_rows_of_the_queues_labels_download(
    graded: Repository, viewer: User, maintainer: User
) -> None:
    downloaded = read_label_rows(
        _page_download(viewer, "queue_labels_download", graded.pk, "jsonl").encode(), "labels.jsonl"
    )
    assert len(downloaded) > 5
    listed = [LabelRow.model_validate(r) for r in _all_labels(token_for(viewer, graded, role=Role.VIEWER), 4)]
    assert _sorted(listed) == _sorted(downloaded)
    # The filters narrow the same rows.
    secret = token_for(viewer, graded, role=Role.VIEWER)
    for filters in ({"task": "t_beta"}, {"arm": "plain", "verdict": "fail"}, {"reviewer": "nobody"}):
        got = _sorted([LabelRow.model_validate(r) for r in _all_labels(secret, 100, **filters)])
        want = _sorted([r for r in downloaded if all(getattr(r, k) == v for k, v in filters.items())])
        assert got == want, filters
    assert any(r.task == "t_beta" for r in downloaded) and any(r.verdict == "fail" for r in downloaded)
    bad = Client().get(f"{API}/labels", {"cursor": "x"}, headers=bearer(secret))
    assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "query.cursor"


def _post(secret: str, body: dict[str, Any], repository: str = "example-project") -> Any:
    return Client().post(
        f"/api/v1/repositories/{repository}/labels",
        json.dumps(body),
        content_type="application/json",
        headers=bearer(secret),
    )


def test_a_reviewer_token_adds_a_label_as_the_queue_page_does_and_its_role_caps_it(
    graded: Repository, reviewer: User, maintainer: User, viewer: User, other_repository: Repository
) -> None:
    grade = RunGrade.objects.filter(run__task__task_id="t_alpha", is_current=True, run__arm="plain").first()
    assert grade is not None
    body = {
        "run_id": grade.run_id,
        "item_id": "N2",
        "verdict": "fail",
        "note": "not quite",
        "queue": "judges",
    }
    response = _post(token_for(reviewer, graded, role=Role.REVIEWER), body)
    assert response.status_code == 201, response.content
    row = LabelRow.model_validate(response.json())
    assert (row.reviewer, row.item, row.verdict, row.note) == ("reviewer", "N2", "fail", "not quite")
    stored = HumanVerdict.objects.get(run_id=grade.run_id, item_id="N2", by=reviewer)
    assert stored.verdict == "fail" and stored.diff_sha256 == grade.run.diff_sha256
    # Given again, it replaces the reviewer's own label (as the queue page).
    assert (
        _post(token_for(reviewer, graded, role=Role.REVIEWER), {**body, "verdict": "pass"}).status_code == 201
    )
    assert HumanVerdict.objects.filter(run_id=grade.run_id, item_id="N2", by=reviewer).get().verdict == "pass"
    # A maintainer's token made with the viewer role labels nothing; a viewer's either.
    count = HumanVerdict.objects.count()
    for secret in (
        token_for(maintainer, graded, role=Role.VIEWER),
        token_for(viewer, graded, role=Role.VIEWER),
    ):
        refused = _post(secret, body)
        assert refused.status_code == 403 and refused["Content-Type"] == PROBLEM
    # Adjudicating is a maintainer's: a reviewer's token is refused, a maintainer's is not.
    assert (
        _post(token_for(reviewer, graded, role=Role.REVIEWER), {**body, "adjudicate": True}).status_code
        == 403
    )
    assert HumanVerdict.objects.count() == count
    ruling = _post(token_for(maintainer, graded), {**body, "adjudicate": True})
    assert ruling.status_code == 201 and ruling.json()["adjudicated"] is True
    # An item the grade has no verdict on, a run of no grade, a NUL in the note: named, nothing written.
    secret = token_for(reviewer, graded, role=Role.REVIEWER)
    missing = _post(secret, {**body, "item_id": "Z9"})
    assert missing.status_code == 404 and missing.json()["errors"][0]["field"] == "item_id"
    assert _post(secret, {**body, "run_id": 10**9}).json()["errors"][0]["field"] == "run_id"
    for field in ("run_id", "grade_id"):  # beyond the databases' 64 bits: refused before any lookup
        huge = _post(secret, {**body, field: 2**64})
        assert huge.status_code == 422 and huge.json()["errors"][0]["field"] == field
    nul = _post(secret, {**body, "note": "a\x00b"})
    assert nul.status_code == 422 and nul.json()["errors"][0]["field"] == "note"
    assert HumanVerdict.objects.count() == count + 1


def test_a_token_scoped_to_one_repository_gets_404_on_anothers_labels(
    graded: Repository, maintainer: User, other_repository: Repository
) -> None:
    Membership.objects.create(repository=other_repository, user=maintainer, role=Role.MAINTAINER)
    secret = token_for(maintainer, graded)
    grade = RunGrade.objects.filter(is_current=True).first()
    assert grade is not None
    for path in ("labels", "report/runs", "report/items", "sweeps/1/export"):
        response = Client().get(f"/api/v1/repositories/other-project/{path}", headers=bearer(secret))
        assert response.status_code == 404 and response["Content-Type"] == PROBLEM, path
    body = {"run_id": grade.run_id, "item_id": "B1", "verdict": "pass"}
    assert _post(secret, body, "other-project").status_code == 404


@pytest.mark.parametrize("filters", [{}, {"arm": "plain"}, {"prompt_style": "spec"}])
def test_the_report_rows_are_the_report_pages_runs_and_items_downloads(
    graded: Repository, viewer: User, filters: dict[str, str]
) -> None:
    secret = token_for(viewer, graded, role=Role.VIEWER)
    kinds: tuple[tuple[str, type[RunRow] | type[ItemRow]], ...] = (("runs", RunRow), ("items", ItemRow))
    for kind, model in kinds:
        downloaded = _page_download(viewer, f"report_{kind}", graded.pk, "csv", query=filters)
        page: Any = read_rows(downloaded, model)
        answer = Client().get(f"{API}/report/{kind}", filters, headers=bearer(secret))
        assert answer.status_code == 200
        data = answer.json()
        rows = [model.model_validate(r) for r in data["rows"]]
        assert rows == page[1] and len(rows) > 0, kind
        assert data["provenance"]["filters"] == filters
        for fmt, content_type in (("csv", "text/csv"), ("jsonl", "application/jsonl")):
            response: Any = Client().get(
                f"{API}/report/{kind}", {**filters, "format": fmt}, headers=bearer(secret)
            )
            assert response.status_code == 200 and response["Content-Type"].startswith(content_type)
            suffix = "".join(f"-{k.replace('_', '-')}-{v}" for k, v in filters.items())
            assert (
                response["Content-Disposition"]
                == f'attachment; filename="example-project-{kind}{suffix}.{fmt}"'
            )
            text = b"".join(response.streaming_content).decode()
            provenance, file_rows = read_rows(text, model)  # type: ignore[type-var]
            assert file_rows == page[1] and provenance.filters == filters
    wrong = Client().get(f"{API}/report/runs", {"format": "xml"}, headers=bearer(secret))
    assert wrong.status_code == 422 and wrong.json()["errors"][0]["field"] == "query.format"

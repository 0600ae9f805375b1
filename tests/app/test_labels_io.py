"""Labels in and out (issue 32 §4): every label downloads from the queue page as CSV and JSONL, the same
rows export_labels writes; import_labels and the queue page's upload read them back all or nothing,
naming every bad line; and `rubric report --labels` reads the file to the same human verdicts as the
app's own summary."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from grading import LABEL_FIELDS
from rubrics_app.access import Actor
from rubrics_app.models import HumanVerdict, Repository, RubricRevision, RunGrade
from rubrics_app.services.runs import queue as review_queue
from tests.app.report_helpers import build_runs, label_runs, rubric_report_json
from tests.app.runs_helpers import import_graded

pytestmark = pytest.mark.django_db


@pytest.fixture
def labelled(
    tmp_path: Path,
    repository: Repository,
    admitted_revision: RubricRevision,
    reviewer: User,
    maintainer: User,
) -> Repository:
    """Two runs; the reviewer and the maintainer label B1 of the first differently, the reviewer N2 too."""
    import_graded(tmp_path, repository, admitted_revision)
    first = RunGrade.objects.order_by("run__repetition").first()
    assert first is not None
    review_queue.label(first, "B1", "fail", "misses the GPU path", "judges", Actor.member(reviewer))
    review_queue.label(first, "N2", "pass", "", "judges", Actor.member(reviewer))
    review_queue.label(first, "B1", "pass", 'says "fine", really', "judges", Actor.member(maintainer))
    return repository


def stored() -> list[tuple[Any, ...]]:
    return sorted(
        HumanVerdict.objects.values_list(
            "run_id", "item_id", "criterion_sha256", "diff_sha256", "by_id", "verdict", "note", "at",
            "inclusion_probability", "adjudicated", "queue",
        )
    )  # fmt: skip


def download(user: User, repository: Repository, fmt: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(reverse("rubrics:queue_labels_download", args=[repository.pk, fmt]))
    assert response.status_code == 200
    assert response["Content-Disposition"].endswith(f'-labels.{fmt}"')
    return b"".join(response.streaming_content).decode()  # type: ignore[attr-defined]


def test_the_queue_page_downloads_every_label_as_export_labels_writes_it(
    labelled: Repository, viewer: User
) -> None:
    text = download(viewer, labelled, "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert tuple(csv.reader(io.StringIO(text)).__next__()) == LABEL_FIELDS
    assert sorted((r["item"], r["reviewer"], r["verdict"]) for r in rows) == [
        ("B1", "maintainer", "pass"),
        ("B1", "reviewer", "fail"),
        ("N2", "reviewer", "pass"),
    ]
    assert {r["task"] for r in rows} == {"fix_fraction_gt1"} and all(
        len(r["diff_sha256"]) == 64 for r in rows
    )
    jsonl = download(viewer, labelled, "jsonl")
    out = io.StringIO()
    call_command("export_labels", "--repository", labelled.name, stdout=out)
    assert out.getvalue() == jsonl
    assert [json.loads(line)["note"] for line in jsonl.splitlines()] == [
        r["note"] for r in rows
    ]  # the same rows, the same order
    page = Client()
    page.force_login(viewer)
    html = page.get(reverse("rubrics:queue", args=[labelled.pk])).content.decode()
    assert 'id="labels-download-csv"' in html and "Import labels" not in html  # a viewer cannot upload


def test_import_labels_puts_back_exactly_what_was_exported(labelled: Repository, tmp_path: Path) -> None:
    before = stored()
    for fmt in ("jsonl", "csv"):
        target = tmp_path / f"labels.{fmt}"
        call_command(
            "export_labels", "--repository", labelled.name, "--out", str(target), stdout=io.StringIO()
        )
        HumanVerdict.objects.all().delete()
        out = io.StringIO()
        call_command("import_labels", str(target), "--repository", labelled.name, stdout=out)
        assert "3 labels added, 0 replaced" in out.getvalue()
        assert stored() == before


def test_a_bad_file_imports_nothing_and_names_every_bad_line(
    labelled: Repository, tmp_path: Path, maintainer: User, reviewer: User
) -> None:
    out = io.StringIO()
    call_command("export_labels", "--repository", labelled.name, stdout=out)
    good, second, third = (json.loads(line) for line in out.getvalue().splitlines())
    wrong_diff = {**second, "diff_sha256": "0" * 64}
    stranger = {**third, "reviewer": "nobody"}
    bad_verdict = {**good, "item": "N3", "verdict": "maybe"}
    lines = [
        json.dumps(good),
        json.dumps(wrong_diff),
        json.dumps(stranger),
        "not json",
        json.dumps(bad_verdict),
    ]
    target = tmp_path / "labels.jsonl"
    target.write_text("\n".join(lines) + "\n")
    HumanVerdict.objects.all().delete()
    err = io.StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("import_labels", str(target), "--repository", labelled.name, stderr=err)
    assert raised.value.returncode == 2
    # Reading first: the unreadable lines (4 and 5) are named, and nothing is written.
    said = err.getvalue()
    assert f"{target}:4: not JSON" in said and f"{target}:5: verdict" in said
    assert not HumanVerdict.objects.exists()
    # Once every line reads, the rows that name the wrong diff or an unknown reviewer are named.
    target.write_text("\n".join(lines[:3]) + "\n")
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_labels", str(target), "--repository", labelled.name, stderr=err)
    said = err.getvalue()
    assert "row 2: diff_sha256" in said and "row 3: reviewer: 'nobody'" in said and "row 1" not in said
    assert not HumanVerdict.objects.exists()
    # The same through the queue page's upload, a maintainer's: every problem on the page, nothing kept.
    client = Client()
    client.force_login(maintainer)
    with target.open("rb") as upload:
        response = client.post(
            reverse("rubrics:queue_labels_upload", args=[labelled.pk]), {"labels": upload}, follow=True
        )
    page = response.content.decode()
    assert "2 problems, nothing imported" in page and "row 3: reviewer" in page
    assert not HumanVerdict.objects.exists()
    target.write_text(lines[0] + "\n")
    with target.open("rb") as upload:
        denied = Client()
        denied.force_login(reviewer)
        assert (
            denied.post(
                reverse("rubrics:queue_labels_upload", args=[labelled.pk]), {"labels": upload}
            ).status_code
            == 403
        )
    with target.open("rb") as upload:
        response = client.post(
            reverse("rubrics:queue_labels_upload", args=[labelled.pk]), {"labels": upload}, follow=True
        )
    assert "1 label added" in response.content.decode() and HumanVerdict.objects.count() == 1


def test_rubric_report_reads_the_labels_file_as_the_app_does(tmp_path: Path, repository: Repository) -> None:
    run_dirs = build_runs(tmp_path, repository)
    label_runs(repository)
    rows, summary = tmp_path / "labels.jsonl", tmp_path / "labels.json"
    for target in (rows, summary):
        call_command(
            "export_labels", "--repository", repository.name, "--out", str(target), stdout=io.StringIO()
        )
    assert json.loads(summary.read_text())  # the app's own per-run verdicts: some runs labelled
    from_rows = rubric_report_json(run_dirs, "--labels", str(rows))["judge_accuracy"]
    from_summary = rubric_report_json(run_dirs, "--labels", str(summary))["judge_accuracy"]
    assert from_rows == from_summary and from_rows["labelled"] == len(json.loads(summary.read_text()))

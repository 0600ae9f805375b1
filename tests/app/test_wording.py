"""What a newcomer reads: no specification section numbers in what the pages show, and counts in the right
number (issue 21 §4)."""

from __future__ import annotations

import re
from pathlib import Path

from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from rubrics_app.models import Job, JobKind, JobStatus, Repository

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
# What a browser never shows: template comments.
COMMENTS = re.compile(r"\{#.*?#\}|\{% comment %\}.*?\{% endcomment %\}", re.S)


def test_no_template_shows_a_section_mark() -> None:
    shown = {
        path.relative_to(TEMPLATES).as_posix(): COMMENTS.sub("", path.read_text())
        for path in TEMPLATES.rglob("*.html")
    }
    assert [name for name, text in shown.items() if "§" in text] == []


def test_job_kinds_are_named_without_section_numbers() -> None:
    assert [kind.label for kind in JobKind if "§" in kind.label] == []
    assert JobKind.CALIBRATE_REVISION.label == "Calibrate a revision against its admission rows"


def test_a_calibration_job_page_titles_it_in_words(maintainer: User, repository: Repository) -> None:
    job = Job.objects.create(
        kind=JobKind.CALIBRATE_REVISION, repository=repository, created_by=maintainer, status=JobStatus.QUEUED
    )
    client = Client()
    client.force_login(maintainer)
    page = client.get(reverse("rubrics:job_detail", args=[repository.pk, job.pk])).content.decode()
    assert "<h1>Calibrate a revision against its admission rows · job" in page
    assert "§" not in page


def test_one_saved_cutoff_is_one_model(maintainer: User, repository: Repository) -> None:
    client = Client()
    client.force_login(maintainer)
    url = reverse("rubrics:report_cutoffs", args=[repository.pk])
    page = client.post(url, {"cutoffs": '{"model-a": "2025-05-01"}'}, follow=True).content.decode()
    assert "Training cutoffs saved (1 model)." in page

"""What keeps the pages within a phone's width (issue 8 §6; checked by eye in headless Chromium at 390 and
320 px): every list table scrolls inside its own box, no inline width pins a column, and the report's SVG
charts scale to the width they are given."""

from __future__ import annotations

import re
from pathlib import Path

from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from rubrics_app.access import Actor
from rubrics_app.models import RevisionStatus, RunGrade, Task
from rubrics_app.services.rubrics import revisions
from tests.app.conftest import MakeRevision, calibrate
from tests.app.report_rows import bulk_runs

CSS = Path(__file__).resolve().parents[2] / "static" / "rubrics" / "app.css"


def _assert_narrow(html: str, page: str) -> None:
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
    tables = re.findall(r'(.{0,40})<table class="list[ "]', html, flags=re.S)
    for before in tables:
        assert before.rstrip().endswith('<div class="table-scroll">'), page
    assert "<th style=" not in html and '<select name="other" id="other" style' not in html, page


def test_wide_tables_scroll_in_their_own_box(maintainer: User, make_revision: MakeRevision) -> None:
    old = make_revision(RevisionStatus.APPROVED)
    run = calibrate(old, maintainer)
    new = revisions.new_draft_from(old, by=Actor.member(maintainer))
    repo, task = new.task.repository_id, new.task_id
    bulk_runs([Task.objects.get(pk=task)], ["guidance", "plain"], ["claude-x", "gpt-y"], 2)
    grade = RunGrade.objects.order_by("pk").first()
    assert grade is not None
    client = Client()
    client.force_login(maintainer)
    pages = [
        reverse("rubrics:repository_list"),
        reverse("rubrics:repository_detail", args=[repo]),
        reverse("rubrics:task_detail", args=[repo, task]),  # with its agent runs
        reverse("rubrics:revision_detail", args=[repo, new.pk]),
        reverse("rubrics:revision_compare", args=[repo, new.pk]) + f"?other={old.pk}",
        reverse("rubrics:calibration_detail", args=[repo, run.pk]),
        reverse("rubrics:queue", args=[repo]) + "?kind=judges",
        reverse("rubrics:queue_entry", args=[repo, grade.pk, "N1"]) + "?kind=judges",
        reverse("rubrics:report", args=[repo]),
    ]
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, page
        html = response.content.decode()
        assert html.count('<table class="list') >= (1 if "report" in page or "queue/?" in page else 0)
        _assert_narrow(html, page)


def test_the_report_charts_are_drawn_at_the_page_width_with_text_of_12_px_or_more(
    maintainer: User, make_revision: MakeRevision
) -> None:
    revision = make_revision(RevisionStatus.DRAFT)
    task = revision.task
    bulk_runs([task], ["a-rather-long-arm-name", "base"], ["claude-with-a-long-model-id-20250929"], 3)
    client = Client()
    client.force_login(maintainer)
    html = client.get(reverse("rubrics:report", args=[task.repository_id])).content.decode()
    svgs = re.findall(r"<svg [^>]*>.*?</svg>", html, re.DOTALL)
    assert len(svgs) == 3  # the forest plot, the rates chart and one histogram
    for svg in svgs:
        opening = svg.split(">", 1)[0]
        # Drawn at the width it is given, not scaled from a drawing: text in px keeps its size at 390 px.
        assert 'width="100%"' in opening and "viewBox" not in opening
        sizes = [int(n) for n in re.findall(r'font-size="(\d+)"', svg)]
        assert sizes and min(sizes) >= 12
        assert all(float(x) <= 100 for x in re.findall(r' (?:x|x1|x2|cx|width)="([\d.]+)%"', svg))
        assert not re.search(r' (?:x|cx)="[1-9]\d{2,}"', svg)  # no absolute position beyond a phone
    css = CSS.read_text()
    assert "svg.report-chart { display: block; width: 100%; }" in css

"""What keeps the pages within a phone's width (issue 8 §6; checked by eye in headless Chromium at 390 and
320 px): every list table scrolls inside its own box, and no inline width pins a column."""

from __future__ import annotations

import re

from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from rubrics_app.models import RevisionStatus
from rubrics_app.services import revisions
from tests.app.conftest import MakeRevision


def test_wide_tables_scroll_in_their_own_box(maintainer: User, make_revision: MakeRevision) -> None:
    old = make_revision(RevisionStatus.APPROVED)
    new = revisions.new_draft_from(old, by=maintainer)
    repo, task = new.task.repository_id, new.task_id
    client = Client()
    client.force_login(maintainer)
    pages = [
        reverse("rubrics:repository_list"),
        reverse("rubrics:repository_detail", args=[repo]),
        reverse("rubrics:task_detail", args=[repo, task]),
        reverse("rubrics:revision_detail", args=[repo, new.pk]),
        reverse("rubrics:revision_compare", args=[repo, new.pk]) + f"?other={old.pk}",
    ]
    for page in pages:
        html = client.get(page).content.decode()
        assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
        tables = re.findall(r'(.{0,40})<table class="list">', html, flags=re.S)
        for before in tables:
            assert before.rstrip().endswith('<div class="table-scroll">'), page
        assert "<th style=" not in html and '<select name="other" id="other" style' not in html, page

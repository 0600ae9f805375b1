"""The comparison shows values as the page and the edit form do, not Python's reprs (issue 8 §6)."""

from __future__ import annotations

import re

from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from rubrics_app.access import Actor
from rubrics_app.models import RevisionStatus
from rubrics_app.services.rubrics import revisions
from tests.app.conftest import MakeRevision


def cells(html: str, label: str) -> list[str]:
    """The two value cells of every row headed ``label``."""
    rows = re.findall(rf"<th[^>]*>{label}</th>\s*(<td.*?</td>)\s*(<td.*?</td>)", html, flags=re.S)
    return [re.sub(r"<[^>]+>", "", cell).strip() for row in rows for cell in row]


def test_compare_shows_flags_weights_limits_and_reviews_in_words(
    viewer: User, maintainer: User, make_revision: MakeRevision
) -> None:
    old = make_revision(RevisionStatus.APPROVED)
    new = revisions.new_draft_from(old, by=Actor.member(maintainer))
    b2, n2 = new.items.get(item_id="B2"), new.items.get(item_id="N2")
    revisions.edit_item(b2, b2.version, {"needs_tree": False}, by=Actor.member(maintainer))
    revisions.edit_item(n2, n2.version, {"weight": 2.5}, by=Actor.member(maintainer))
    revisions.edit_revision(new, new.version, {"max_files": None}, by=Actor.member(maintainer))
    page = reverse("rubrics:revision_compare", args=[new.task.repository_id, new.pk]) + f"?other={old.pk}"
    client = Client()
    client.force_login(viewer)
    html = client.get(page).content.decode()

    assert "False" not in html and "True" not in html and "2.0" not in html and "None" not in html
    # Rows in item order: B1, B2 (blockers: needs tree), N1, N2, N3 (non-blockers: weight).
    assert cells(html, "Needs tree") == ["no", "no", "yes", "no"]
    assert cells(html, "Weight") == ["1", "1", "2", "2.5", "1", "1"]
    assert cells(html, "Max files") == ["8", "no limit"]
    assert cells(html, "Review")[:4] == ["Approved", "Approved", "Approved", "Pending"]

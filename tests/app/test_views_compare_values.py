"""The comparison shows values as the page and the edit form do, not Python's reprs (issue 8 §6)."""

from __future__ import annotations

import re

from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from rubrics_app.access import Actor
from rubrics_app.models import RevisionStatus, RubricRevision
from rubrics_app.services.rubrics import revisions
from tests.app.conftest import MakeRevision


def cells(html: str, label: str) -> list[str]:
    """The two value cells of every row headed ``label``."""
    rows = re.findall(rf"<th[^>]*>{label}</th>\s*(<td.*?</td>)\s*(<td.*?</td>)", html, flags=re.S)
    return [re.sub(r"<[^>]+>", "", cell).strip() for row in rows for cell in row]


def compare_page(viewer: User, old: RubricRevision, new: RubricRevision) -> str:
    """The comparison of ``new`` with ``old``, as a viewer sees it."""
    page = reverse("rubrics:revision_compare", args=[new.task.repository_id, new.pk]) + f"?other={old.pk}"
    client = Client()
    client.force_login(viewer)
    return client.get(page).content.decode()


def test_compare_shows_flags_weights_limits_and_reviews_in_words(
    viewer: User, maintainer: User, make_revision: MakeRevision
) -> None:
    old = make_revision(RevisionStatus.APPROVED)
    new = revisions.new_draft_from(old, by=Actor.member(maintainer))
    b2, n2 = new.items.get(item_id="B2"), new.items.get(item_id="N2")
    revisions.edit_item(b2, b2.version, {"needs_tree": False}, by=Actor.member(maintainer))
    revisions.edit_item(n2, n2.version, {"weight": 2.5}, by=Actor.member(maintainer))
    revisions.edit_revision(new, new.version, {"max_files": None}, by=Actor.member(maintainer))
    html = compare_page(viewer, old, new)

    assert "False" not in html and "True" not in html and "2.0" not in html and "None" not in html
    # Rows in item order: B1, B2 (blockers: needs tree), N1, N2, N3 (non-blockers: weight).
    assert cells(html, "Needs tree") == ["no", "no", "yes", "no"]
    assert cells(html, "Weight") == ["1", "1", "2", "2.5", "1", "1"]
    assert cells(html, "Max files") == ["8", "no limit"]
    assert cells(html, "Review")[:4] == ["Approved", "Approved", "Approved", "Pending"]


def test_compare_marks_exactly_the_changed_word_and_keeps_html_escaped(
    viewer: User, maintainer: User, make_revision: MakeRevision
) -> None:
    old = make_revision(RevisionStatus.APPROVED)
    new = revisions.new_draft_from(old, by=Actor.member(maintainer))
    criteria = {
        "B1": "A fraction above 1 raises TypeError; it is not silently clamped.",
        # Criterion text is anyone's: HTML in it, on either side, stays text.
        "N1": 'The error message names <script>alert("x")</script> the parameter.',
    }
    for item_id, criterion in criteria.items():
        item = new.items.get(item_id=item_id)
        revisions.edit_item(item, item.version, {"criterion": criterion}, by=Actor.member(maintainer))
    html = compare_page(viewer, old, new)

    b1_row = re.search(r"<th[^>]*>Criterion</th>\s*(<td.*?</td>)\s*(<td.*?</td>)", html, flags=re.S)
    assert b1_row is not None
    assert b1_row.group(1) == (
        '<td class="pre-wrap changed">A fraction above 1 raises <del>ValueError</del>; it is not silently '
        "clamped.</td>"
    )
    assert b1_row.group(2) == (
        '<td class="pre-wrap changed">A fraction above 1 raises <ins>TypeError</ins>; it is not silently '
        "clamped.</td>"
    )
    marked = "".join(
        "".join(row)
        for row in re.findall(r"<th[^>]*>Criterion</th>\s*(<td.*?</td>)\s*(<td.*?</td>)", html, re.S)
    )
    # B1's word, and N1's insertion (nothing deleted there): no other criterion has a mark.
    assert (marked.count("<del>"), marked.count("<ins>")) == (1, 2)
    assert (
        "The error message names <ins>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; </ins>the parameter."
    ) in html
    assert "<script>alert" not in html

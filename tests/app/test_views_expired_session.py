"""An htmx action after the session expired: a full-page move to the login page that comes back to the page
the maintainer was on (issue 8 §6), not the login form swapped into an item and a 405 after logging in; the
action itself is kept for after the login (issue 32 §5)."""

from __future__ import annotations

from urllib.parse import quote

from django.contrib.auth.models import User
from django.urls import reverse

from rubrics_app.models import ReviewState, RubricItem, RubricRevision
from tests.app.client_helpers import expired
from tests.app.conftest import PASSWORD


def test_an_htmx_post_goes_to_login_with_next_set_to_the_page(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    b1 = RubricItem.objects.get(revision=draft_revision, item_id="B1")
    repo = draft_revision.task.repository_id
    page = reverse("rubrics:revision_detail", args=[repo, draft_revision.pk])
    client = expired(maintainer)
    response = client.post(
        reverse("rubrics:item_approve", args=[repo, b1.pk]),
        {"version": b1.version},
        headers={"HX-Request": "true", "HX-Current-URL": f"http://testserver{page}?tab=x#item-{b1.pk}"},
    )
    # 200 with HX-Redirect: htmx navigates the whole window; nothing is swapped into the row.
    assert response.status_code == 200
    # The fragment too: back at the item acted on.
    at_item = f"{page}?tab=x#item-{b1.pk}"
    login = f"{reverse('login')}?next={quote(at_item, safe='/')}"
    assert response["HX-Redirect"] == login
    assert response.content == b""
    b1.refresh_from_db()
    assert b1.review_state == ReviewState.PENDING

    # Logging in there ends on the approval kept for confirmation (test_views_kept_post.py), never on the
    # action's URL; dropping it goes back to the item.
    client.get(login)
    back = client.post(login, {"username": "maintainer", "password": PASSWORD, "next": at_item})
    assert back.status_code == 302 and back["Location"] == reverse("resume_post")
    dropped = client.post(reverse("resume_drop"), {"back": at_item})
    assert dropped["Location"] == at_item


def test_a_page_on_another_site_is_never_the_next_page(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    item = draft_revision.items.first()
    assert item is not None
    row = reverse("rubrics:item_row", args=[draft_revision.task.repository_id, item.pk])
    response = expired(maintainer).get(
        row, headers={"HX-Request": "true", "HX-Current-URL": "https://evil.example/phish"}
    )
    assert response["HX-Redirect"] == f"{reverse('login')}?next=/"


def test_a_plain_request_still_gets_the_usual_redirect(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    page = reverse("rubrics:revision_detail", args=[draft_revision.task.repository_id, draft_revision.pk])
    response = expired(maintainer).get(page)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next={quote(page, safe='/')}"
    assert "HX-Redirect" not in response

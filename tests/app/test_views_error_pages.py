"""403 and 404 in the site's frame with a way back, and the favicon (issue 8 §6)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.contrib.staticfiles import finders
from django.test import Client
from django.urls import reverse

from rubrics_app.models import RubricRevision
from tests.app.client_helpers import logged_in


def test_404_has_the_site_frame_and_a_way_back(outsider: User, draft_revision: RubricRevision) -> None:
    page = reverse("rubrics:revision_detail", args=[draft_revision.task.repository_id, draft_revision.pk])
    response = logged_in(outsider).get(page)
    assert response.status_code == 404
    html = response.content.decode()
    assert '<header class="topbar">' in html and "outsider" in html  # the frame, with who is logged in
    assert "<h1>Not found</h1>" in html
    assert f'href="{reverse("rubrics:repository_list")}">Back to your repositories</a>' in html
    # It does not tell an outsider the repository exists.
    assert "example-project" not in html


def test_404_of_an_unknown_url_for_an_anonymous_visitor_offers_login() -> None:
    response = Client().get("/no/such/page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "<code>/no/such/page/</code>" in html
    assert f'href="{reverse("login")}">Log in</a>' in html


def test_403_says_why_and_leads_back_to_the_repository(viewer: User, draft_revision: RubricRevision) -> None:
    repo = draft_revision.task.repository_id
    response = logged_in(viewer).get(reverse("rubrics:revision_edit", args=[repo, draft_revision.pk]))
    assert response.status_code == 403
    html = response.content.decode()
    assert '<header class="topbar">' in html
    assert "You cannot do this: this needs the maintainer role on example-project." in html
    assert f'href="{reverse("rubrics:repository_detail", args=[repo])}">Back to the repository</a>' in html


def test_a_stale_csrf_token_gets_a_framed_page(maintainer: User, draft_revision: RubricRevision) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(maintainer)
    response = client.post(reverse("rubrics:revision_new_draft", args=[draft_revision.task.repository_id, 1]))
    assert response.status_code == 403
    html = response.content.decode()
    assert '<header class="topbar">' in html and "This form has expired" in html


def test_every_page_links_the_vendored_favicon(viewer: User) -> None:
    html = Client().get(reverse("login")).content.decode()
    assert '<link rel="icon" href="/static/rubrics/favicon.ico" sizes="32x32">' in html
    assert '<link rel="icon" href="/static/rubrics/favicon.svg" type="image/svg+xml">' in html
    for name in ("rubrics/favicon.ico", "rubrics/favicon.svg"):
        found = finders.find(name)
        assert isinstance(found, str)
        with open(found, "rb") as icon:
            head = icon.read(8)
        assert head[:4] == b"\x00\x00\x01\x00" if name.endswith(".ico") else head.startswith(b"<svg")
    # Browsers that ask for /favicon.ico get it without logging in.
    response = Client().get("/favicon.ico")
    assert response.status_code == 302 and response["Location"] == "/static/rubrics/favicon.ico"

"""A form sent after the session ended is kept, shown after the login and sent again only when the user
presses the button (views/resume.py): a label, the cutoffs, an htmx approval, a form with several values
for one name; files are not kept and the page says so; nothing leads to another site."""

from __future__ import annotations

import datetime
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.test import Client
from django.urls import include, path, reverse

from rubrics_app.models import HumanVerdict, Repository, ReviewState, RubricItem, RubricRevision, RunGrade
from rubrics_app.views import resume
from rubrics_app.views.common import require_post
from tests.app.client_helpers import expired
from tests.app.conftest import PASSWORD
from tests.app.runs_helpers import import_graded

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"


def log_in(client: Client, username: str, next_page: str) -> Any:
    client.get(f"{LOGIN}?next={quote(next_page)}")
    return client.post(LOGIN, {"username": username, "password": PASSWORD, "next": next_page})


class _Forms(HTMLParser):
    """The forms of a page: each one's attributes and its inputs' (name, value, type) in order."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[tuple[dict[str, str | None], list[tuple[str, str, str]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "form":
            self.forms.append((found, []))
        elif tag == "input" and self.forms:
            self.forms[-1][1].append(
                (found.get("name") or "", found.get("value") or "", found.get("type") or "")
            )


def resume_form(html: str) -> tuple[dict[str, str | None], list[tuple[str, str, str]]]:
    parser = _Forms()
    parser.feed(html)
    (form,) = [f for f in parser.forms if f[0].get("id") == "resume-form"]
    return form


def send_again(client: Client) -> Any:
    """Press "Send it again" on the confirm page: post its form's fields to its action."""
    page = client.get(reverse("resume_post"))
    assert page.status_code == 200
    attrs, inputs = resume_form(page.content.decode())
    data: dict[str, list[str]] = {}
    for name, value, kind in inputs:
        if kind != "file" and name != "csrfmiddlewaretoken":
            data.setdefault(name, []).append(value)
    assert attrs["action"] is not None
    return client.post(attrs["action"], data)


@pytest.fixture
def graded(tmp_path: Path, repository: Repository, admitted_revision: RubricRevision) -> RubricRevision:
    import_graded(tmp_path, repository, admitted_revision)
    return admitted_revision


def test_a_label_sent_after_expiry_is_shown_after_login_and_saved_once_sent_again(
    reviewer: User, repository: Repository, graded: RubricRevision
) -> None:
    grade = RunGrade.objects.order_by("run__repetition").first()
    assert grade is not None
    entry = reverse("rubrics:queue_entry", args=[repository.pk, grade.pk, "B1"]) + "?kind=judges"
    label = reverse("rubrics:queue_label", args=[repository.pk, grade.pk, "B1"])
    client = expired(reviewer)
    response = client.post(
        label,
        {"verdict": "pass", "note": 'looks <b>fine</b> "here"', "kind": "judges"},
        headers={"Referer": f"http://testserver{entry}"},
    )
    # To the login page, coming back to the pair (not to the action's URL: that was the 405).
    assert response.status_code == 302
    assert response["Location"] == f"{LOGIN}?next={quote(entry, safe='/')}"
    assert not HumanVerdict.objects.exists()

    login_page = client.get(response["Location"]).content.decode()
    assert "Your session ended" in login_page
    assert "records a reviewer&#x27;s verdict on a pair of the review queue" in login_page

    # The login leads to the confirm page, which shows what was sent, escaped, and does nothing yet.
    logged = log_in(client, "reviewer", entry)
    assert logged.status_code == 302 and logged["Location"] == reverse("resume_post")
    html = client.get(reverse("resume_post")).content.decode()
    assert "looks &lt;b&gt;fine&lt;/b&gt; &quot;here&quot;" in html
    assert "<b>fine</b>" not in html
    attrs, inputs = resume_form(html)
    assert attrs["action"] == label
    assert ("note", 'looks <b>fine</b> "here"', "hidden") in inputs
    assert not HumanVerdict.objects.exists()

    sent = send_again(client)
    assert sent.status_code == 302
    saved = HumanVerdict.objects.get()
    assert (saved.run_id, saved.item_id, saved.verdict) == (grade.run_id, "B1", "pass")
    assert saved.note == 'looks <b>fine</b> "here"'
    # Sent once: the confirm page has nothing left to send.
    assert client.get(reverse("resume_post")).status_code == 404


def test_cutoffs_saved_after_expiry_reach_the_repository(maintainer: User, repository: Repository) -> None:
    report = reverse("rubrics:report", args=[repository.pk])
    client = expired(maintainer)
    cutoffs = json.dumps({"model-a": "2025-01-31"})
    # No Referer (a browser may send none): back to the page the action's require_post names.
    response = client.post(reverse("rubrics:report_cutoffs", args=[repository.pk]), {"cutoffs": cutoffs})
    assert response["Location"] == f"{LOGIN}?next={quote(report, safe='/')}"
    assert log_in(client, "maintainer", report)["Location"] == reverse("resume_post")
    assert (
        "saves the repository&#x27;s training cutoffs" in client.get(reverse("resume_post")).content.decode()
    )
    send_again(client)
    repository.refresh_from_db()
    assert repository.training_cutoffs == {"model-a": "2025-01-31"}


def test_an_htmx_approval_after_expiry_is_kept_and_sent_as_a_plain_form(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    b1 = RubricItem.objects.get(revision=draft_revision, item_id="B1")
    repo = draft_revision.task.repository_id
    page = reverse("rubrics:revision_detail", args=[repo, draft_revision.pk]) + f"#item-{b1.pk}"
    client = expired(maintainer)
    response = client.post(
        reverse("rubrics:item_approve", args=[repo, b1.pk]),
        {"version": b1.version},
        headers={"HX-Request": "true", "HX-Current-URL": f"http://testserver{page}"},
    )
    assert response["HX-Redirect"] == f"{LOGIN}?next={quote(page, safe='/')}"
    assert log_in(client, "maintainer", page)["Location"] == reverse("resume_post")
    b1.refresh_from_db()
    assert b1.review_state == ReviewState.PENDING
    send_again(client)
    b1.refresh_from_db()
    assert b1.review_state == ReviewState.APPROVED


# A form with several values for one name (checkboxes of one group), on a view of its own.
@require_post("echoes the boxes ticked", back="rubrics:repository_list")
def ticked(request: HttpRequest) -> HttpResponse:
    return JsonResponse({"box": request.POST.getlist("box"), "who": request.user.get_username()})


urlpatterns = [path("ticked/", ticked), path("", include("rubrics_app.urls"))]


@pytest.mark.urls("tests.app.test_views_kept_post")
def test_every_value_of_a_multi_value_form_is_sent_again(maintainer: User) -> None:
    client = expired(maintainer)
    client.post("/ticked/", {"box": ["a", "b", "c"], "other": "x"})
    log_in(client, "maintainer", "/")
    answer = send_again(client)
    assert answer.json() == {"box": ["a", "b", "c"], "who": "maintainer"}


def test_a_file_is_not_kept_and_the_page_says_so(maintainer: User, repository: Repository) -> None:
    client = expired(maintainer)
    upload = SimpleUploadedFile("runs.zip", b"PK\x05\x06" + b"\0" * 18, content_type="application/zip")
    client.post(reverse("rubrics:runs_upload", args=[repository.pk]), {"file": upload})
    log_in(client, "maintainer", "/")
    html = client.get(reverse("resume_post")).content.decode()
    assert "A file cannot be kept across a login" in html
    assert "<code>runs.zip</code>" in html
    attrs, inputs = resume_form(html)
    assert attrs["enctype"] == "multipart/form-data"
    assert ("file", "", "file") in inputs  # chosen again here, under its own name
    stored = Session.objects.get().get_decoded()[resume.SESSION_KEY]
    assert stored["files"] == [["file", ["runs.zip"]]]
    assert "PK" not in json.dumps(stored)


def test_a_form_too_large_is_not_kept_and_the_page_says_so(
    maintainer: User, repository: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resume, "MAX_BYTES", 100)
    client = expired(maintainer)
    client.post(reverse("rubrics:report_cutoffs", args=[repository.pk]), {"cutoffs": "x" * 200})
    log_in(client, "maintainer", "/")
    html = client.get(reverse("resume_post")).content.decode()
    assert 'id="resume-too-large"' in html
    assert 'id="resume-form"' not in html
    assert "x" * 200 not in Session.objects.get().session_data


def test_another_site_is_never_where_the_login_or_the_drop_leads(
    maintainer: User, repository: Repository
) -> None:
    client = expired(maintainer)
    response = client.post(
        reverse("rubrics:report_cutoffs", args=[repository.pk]),
        {"cutoffs": ""},
        headers={"Referer": "https://evil.example/repos/1/report/"},
    )
    report = reverse("rubrics:report", args=[repository.pk])
    assert response["Location"] == f"{LOGIN}?next={quote(report, safe='/')}"
    # A next= of another site, given to the login by hand, is not followed either.
    assert log_in(client, "maintainer", "https://evil.example/")["Location"] == reverse("resume_post")
    dropped = client.post(reverse("resume_drop"), {"back": "//evil.example/"})
    assert dropped["Location"] == "/"
    assert client.get(reverse("resume_post")).status_code == 404
    for foreign in ("https://evil.example/", "/\\evil.example/", "javascript:alert(1)"):
        assert client.post(reverse("resume_drop"), {"back": foreign})["Location"] == "/"
    # With nothing kept, a next= of another site is not followed either (Django's own check).
    client.post(reverse("logout"))
    assert log_in(client, "maintainer", "https://evil.example/")["Location"] == "/"


def test_htmx_naming_a_page_of_another_site_is_not_where_the_login_returns(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    b1 = RubricItem.objects.get(revision=draft_revision, item_id="B1")
    repo = draft_revision.task.repository_id
    response = expired(maintainer).post(
        reverse("rubrics:item_approve", args=[repo, b1.pk]),
        {"version": b1.version},
        headers={"HX-Request": "true", "HX-Current-URL": "https://evil.example/phish"},
    )
    row = reverse("rubrics:item_row", args=[repo, b1.pk])
    assert response["HX-Redirect"] == f"{LOGIN}?next={quote(row, safe='/')}"


@pytest.mark.parametrize("foreign", ["//evil.example/x", "https://evil.example/x", "/\\evil.example/x"])
def test_a_kept_form_to_another_site_is_never_offered(maintainer: User, foreign: str) -> None:
    client = Client()
    client.force_login(maintainer)
    session = client.session
    session[resume.SESSION_KEY] = {
        "path": foreign,
        "back": foreign,
        "at": datetime.datetime.now(datetime.UTC).isoformat(),
        "files": [],
        "size": 1,
        "fields": [["a", ["b"]]],
    }
    session.save()
    response = client.get(reverse("resume_post"))
    assert response.status_code == 404
    assert "evil.example" not in response.content.decode()


def test_a_kept_form_older_than_an_hour_is_not_offered(maintainer: User, repository: Repository) -> None:
    client = expired(maintainer)
    client.post(reverse("rubrics:report_cutoffs", args=[repository.pk]), {"cutoffs": "{}"})
    session = Session.objects.get()
    data = session.get_decoded()
    data[resume.SESSION_KEY]["at"] = (
        datetime.datetime.now(datetime.UTC) - resume.KEPT_FOR - datetime.timedelta(seconds=1)
    ).isoformat()
    Session.objects.save(session.session_key, data, session.expire_date)
    assert log_in(client, "maintainer", "/")["Location"] == "/"


def test_the_kept_form_stays_in_the_browser_that_sent_it(maintainer: User, repository: Repository) -> None:
    expired(maintainer).post(reverse("rubrics:report_cutoffs", args=[repository.pk]), {"cutoffs": "{}"})
    other = Client()
    assert log_in(other, "maintainer", "/")["Location"] == "/"
    assert other.get(reverse("resume_post")).status_code == 404


def test_a_logout_sent_after_expiry_is_not_kept(maintainer: User) -> None:
    client = expired(maintainer)
    client.post(reverse("logout"))
    assert log_in(client, "maintainer", "/")["Location"] == "/"


def test_the_login_page_says_the_session_ended_only_when_it_did(
    maintainer: User, repository: Repository
) -> None:
    page = reverse("rubrics:repository_detail", args=[repository.pk])
    ended = expired(maintainer)
    login = ended.get(page)["Location"]
    assert "Your session ended: log in again" in ended.get(login).content.decode()
    # A browser that never had a session: the same login page, without the sentence.
    assert "Your session ended" not in Client().get(login).content.decode()


def test_the_session_of_a_kept_form_lives_an_hour_until_the_login(
    maintainer: User, repository: Repository
) -> None:
    client = expired(maintainer)
    client.post(reverse("rubrics:report_cutoffs", args=[repository.pk]), {"cutoffs": "{}"})
    assert client.session.get_expiry_age() == resume.ANONYMOUS_SESSION_SECONDS
    log_in(client, "maintainer", "/")
    assert client.session.get_expiry_age() == client.session.get_session_cookie_age()


def test_a_session_cookie_gone_with_its_session_still_says_the_session_ended(
    maintainer: User, repository: Repository
) -> None:
    """The session cookie expires with the session: only the cookie a login leaves (and a logout takes)
    tells an ended session from a first visit."""
    page = reverse("rubrics:repository_detail", args=[repository.pk])
    client = Client()
    log_in(client, "maintainer", page)
    del client.cookies[settings.SESSION_COOKIE_NAME]  # the browser dropped it when it expired
    login = client.get(page)["Location"]
    assert "Your session ended: log in again" in client.get(login).content.decode()

    log_in(client, "maintainer", page)
    client.post(reverse("logout"))  # logged out on purpose: nothing ended by itself
    assert "Your session ended" not in client.get(client.get(page)["Location"]).content.decode()


@pytest.mark.parametrize(
    ("page", "purpose"),
    [
        ("rubrics:judge_settings", "saves the repository&#x27;s judges"),
        ("rubrics:draft_settings", "saves how the repository&#x27;s rubrics are drafted"),
        ("rubrics:remote_settings", "saves where the repository&#x27;s rubrics are sent"),
    ],
)
def test_a_page_that_takes_its_own_form_is_where_the_login_returns(
    maintainer: User, repository: Repository, page: str, purpose: str
) -> None:
    settings_page = reverse(page, args=[repository.pk])
    client = expired(maintainer)
    response = client.post(settings_page, {"primary": "scripted:/x.json"})
    assert response["Location"] == f"{LOGIN}?next={quote(settings_page, safe='/')}"
    log_in(client, "maintainer", settings_page)
    confirm = client.get(reverse("resume_post")).content.decode()
    assert purpose in confirm
    assert resume_form(confirm)[0]["action"] == settings_page

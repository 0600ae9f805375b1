"""Login and logout; every URL of the app refuses anonymous users."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.contrib.staticfiles import finders
from django.test import Client
from django.urls import reverse

from tests.app.conftest import PASSWORD
from tests.app.url_walk import app_patterns


def test_login_page_and_login(maintainer: User) -> None:
    client = Client(enforce_csrf_checks=True)
    page = client.get(reverse("login"))
    assert page.status_code == 200
    token = page.cookies["csrftoken"].value
    response = client.post(
        reverse("login"), {"username": "maintainer", "password": PASSWORD, "csrfmiddlewaretoken": token}
    )
    assert response.status_code == 302
    assert client.get(reverse("rubrics:repository_list")).status_code == 200


def test_a_wrong_password_is_refused(maintainer: User) -> None:
    response = Client().post(reverse("login"), {"username": "maintainer", "password": "wrong"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()


def test_logout_is_a_post(maintainer: User) -> None:
    client = Client()
    client.force_login(maintainer)
    assert client.get(reverse("logout")).status_code == 405
    assert client.post(reverse("logout")).status_code == 302
    assert client.get(reverse("rubrics:repository_list")).status_code == 302


# db: an anonymous POST is kept in a session for after the login (views/resume.py).
def test_every_app_url_needs_login(db: None) -> None:
    patterns = app_patterns()
    assert len(patterns) >= 15
    client = Client()
    for pattern in patterns:
        # Every converter of this app is an int; 1 is as good as any for an anonymous request.
        kwargs = dict.fromkeys(pattern.pattern.converters, 1)
        url = reverse(f"rubrics:{pattern.name}", kwargs=kwargs)
        for method in (client.get, client.post):
            response = method(url)
            # 405 is the method check (which comes first and says nothing about the object); otherwise login
            assert response.status_code in (302, 405), (url, response.status_code)
            if response.status_code == 302:
                assert response["Location"].startswith(reverse("login")), url


def test_htmx_is_served_by_the_app_itself(maintainer: User) -> None:
    client = Client()
    client.force_login(maintainer)
    html = client.get(reverse("rubrics:repository_list")).content.decode()
    # no CDN: the script is django-htmx's bundled copy of htmx 2, from our own static files
    assert '<script src="/static/django_htmx/htmx-2.min.js" defer></script>' in html
    assert finders.find("django_htmx/htmx-2.min.js") is not None
    assert "unpkg.com" not in html and "cdn" not in html.lower()

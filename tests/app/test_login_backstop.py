"""LoginRequiredMiddleware closes a view that forgot @login_required."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import include, path


def forgetful_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse("secret")


urlpatterns = [
    path("forgetful/", forgetful_view),
    path("", include("rubrics_app.urls")),
]


@pytest.mark.django_db
@pytest.mark.urls("tests.app.test_login_backstop")
def test_it_sends_anonymous_users_to_login_from_an_undecorated_view(client: Client) -> None:
    response = client.get("/forgetful/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/") or "login" in response["Location"]


@pytest.mark.django_db
@pytest.mark.urls("tests.app.test_login_backstop")
def test_it_lets_a_logged_in_user_through(client: Client) -> None:
    client.force_login(User.objects.create_user("someone", password="x"))
    assert client.get("/forgetful/").content == b"secret"

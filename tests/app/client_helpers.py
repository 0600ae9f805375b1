"""A test client logged in as a user (or whose session has ended), and the header htmx sends, for the page
tests."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.test import Client

# The header htmx adds to its requests; pages answer them with a fragment.
HX = {"HX-Request": "true"}


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def expired(user: User) -> Client:
    """A browser that was logged in as ``user``, whose session the server no longer has."""
    client = Client()
    client.force_login(user)
    Session.objects.all().delete()
    return client

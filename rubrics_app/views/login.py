"""The login page, which names the demo's users while the demo is running (scripts/demo.sh)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.models import User

from rubrics_app.management.commands.load_demo import DEFAULT_PASSWORD, DEMO_USERS


def demo_logins() -> list[tuple[str, str]]:
    """(username, role) of each demo user, when the demo is running: the demo script's setting is on and
    load_demo made the users. Both, so neither a stray setting nor a real user who happens to be called
    "demo" puts a password on the page."""
    if not settings.RUBRICS_DEMO:
        return []
    present = set(
        User.objects.filter(username__in=DEMO_USERS, is_active=True).values_list("username", flat=True)
    )
    return [(name, role.label.lower()) for name, role in DEMO_USERS.items() if name in present]


class LoginView(auth_views.LoginView):
    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["demo_logins"] = demo_logins()
        context["demo_password"] = DEFAULT_PASSWORD
        return context

"""The login page, which names the demo's users while the demo is running (scripts/demo.sh)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.models import User
from django.urls import reverse

from rubrics_app.management.commands.load_demo import DEFAULT_PASSWORD, DEMO_USERS
from rubrics_app.views import resume


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
        # Why the login page is shown: a form kept when the session ended (views.resume), or a page opened
        # after it ended.
        context["kept_post"] = resume.kept(self.request)
        context["session_ended"] = bool(self.request.session.get(resume.ENDED_SESSION_KEY))
        return context

    def get_success_url(self) -> str:
        """The kept form's confirm page when a form was kept, else the ``next`` page as usual."""
        self.request.session.pop(resume.ENDED_SESSION_KEY, None)
        self.request.session.set_expiry(None)  # the logged-in session's usual age, not a kept form's hour
        if resume.kept(self.request) is not None:
            return reverse("resume_post")
        return super().get_success_url()

"""The settings page of one's personal access tokens for the HTTP API: make one (shown once), list them with
their last use, revoke one."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from rubrics_app.forms.tokens import TokenForm
from rubrics_app.models import ApiToken, Role
from rubrics_app.services.tokens import TokenRefused, create_token, revoke_token
from rubrics_app.views.common import require_post


@require_http_methods(["GET", "POST"])
@login_required
def token_settings(request: HttpRequest) -> HttpResponse:
    secret = None
    form = TokenForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            made = create_token(
                request.user, data["name"], list(data["repositories"]), Role(data["role"]), data["days"]
            )
        except TokenRefused as exc:
            form.add_error(None, str(exc))
        else:
            secret = made.secret
            form = TokenForm(user=request.user)
    tokens = ApiToken.objects.filter(user_id=request.user.pk or 0).prefetch_related("repositories")
    context = {"form": form, "tokens": tokens, "secret": secret}
    return render(request, "rubrics/token_settings.html", context, status=422 if form.errors else 200)


@require_post("revokes an API token", back="rubrics:token_settings")
@login_required
def token_revoke(request: HttpRequest, token_pk: int) -> HttpResponse:
    token = revoke_token(request.user, token_pk)
    messages.success(request, f"Token {token.name} revoked.")
    return redirect("rubrics:token_settings")

"""Personal access tokens: made by their owner for chosen repositories and a role no higher than the owner's
on each (the policy in access.py caps it again on every use), revoked by their owner."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from rubrics_app.access import access_of
from rubrics_app.models import ApiToken, Repository, Role


class TokenRefused(Exception):
    """The token asked for is not allowed; the message says why."""


@dataclass(frozen=True)
class NewToken:
    token: ApiToken
    secret: str  # the whole token: shown once, never stored


def create_token(user: Any, name: str, repositories: list[Repository], role: Role, days: int) -> NewToken:
    if not repositories:
        raise TokenRefused("choose at least one repository")
    if not 1 <= days <= settings.API_TOKEN_MAX_DAYS:
        raise TokenRefused(f"the expiry is 1 to {settings.API_TOKEN_MAX_DAYS} days")
    for repository in repositories:
        try:
            access_of(user, repository).require(role, repository)
        except PermissionDenied:
            raise TokenRefused(
                f"your role on {repository.name} is lower than {role.label.lower()}: a token cannot do more "
                "than you"
            ) from None
    secret, prefix, digest = ApiToken.new_secret()
    with transaction.atomic():
        token = ApiToken.objects.create(
            user=user,
            name=name,
            prefix=prefix,
            secret_sha256=digest,
            role=role,
            expires_at=timezone.now() + timedelta(days=days),
        )
        token.repositories.set(repositories)
    return NewToken(token, secret)


def revoke_token(user: Any, pk: int) -> ApiToken:
    token = ApiToken.objects.filter(pk=pk, user_id=user.pk).first()
    if token is None:
        raise PermissionDenied("no such token of yours")
    token.revoke()
    return token

"""Personal access tokens for the HTTP API (docs/api.md): scoped to chosen repositories and a role no
higher than their owner's, with an expiry; stored as a hash, shown once, revocable; each use recorded."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

from rubrics_app.models.repositories import Repository, Role

# A token reads "rbk_<prefix>_<secret>": the prefix finds its row (shown on the settings page so a leaked
# token can be told apart), the secret is only ever stored as its sha256.
TOKEN_TAG = "rbk"
PREFIX_LENGTH = 8


def token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=PREFIX_LENGTH * 2, unique=True)
    secret_sha256 = models.CharField(max_length=64)
    # The most the token may do on any repository of its scope; on each, the owner's role there caps it too.
    role = models.CharField(max_length=20, choices=Role.choices)
    repositories = models.ManyToManyField(Repository, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    last_used_from = models.CharField(max_length=100, blank=True)  # the client's address as the server saw it
    uses = models.PositiveBigIntegerField(default=0)
    # The rate limit counts requests per fixed window (its number since the epoch), in this row: one
    # conditional update per request, shared by every server process.
    window = models.BigIntegerField(default=0)
    window_requests = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"token {self.name} ({TOKEN_TAG}_{self.prefix}_…) of {self.user}"

    @staticmethod
    def new_secret() -> tuple[str, str, str]:
        """(the whole token to show once, its prefix, the sha256 to store)."""
        prefix = secrets.token_hex(PREFIX_LENGTH // 2 * 2)[:PREFIX_LENGTH]
        secret = secrets.token_urlsafe(32)
        return f"{TOKEN_TAG}_{prefix}_{secret}", prefix, token_hash(secret)

    def is_active(self) -> bool:
        return self.revoked_at is None and self.expires_at > timezone.now()

    def revoke(self) -> None:
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])

"""The one permission policy: who may do what to a repository, for the views and the services alike.

Every view and every partial endpoint fetches its repository through :func:`get_repository_for_user`,
which builds a :class:`RepositoryAccess` for (user, repository): someone with no role on the repository gets
404 (they may not learn it exists); someone whose role is too low for the page gets 403.

Every service that changes state takes an :class:`Actor`, never a bare user: the access object the view
built, or :meth:`Actor.command_line` for manage.py commands and the worker (they have the run of the
database anyway, so the command line is allowed everything). The service calls ``actor.require(role,
repository)`` once, with the repository of the object it changes; it raises PermissionDenied when the
actor's role on that repository is too low, or when the access was built for another repository.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import connection
from django.http import Http404, HttpRequest

from rubrics_app.models import ApiToken, Membership, Repository, Role

# What each role may do includes everything below it.
_RANK = {Role.VIEWER: 0, Role.REVIEWER: 1, Role.MAINTAINER: 2}


class Actor:
    """Who does something: someone with a role on one repository, or the command line."""

    # The user recorded as doing it (audit trail, created_by, approved_by); None for the bare command line.
    user: Any

    def require(self, role: Role, repository: Repository) -> None:
        """Raise PermissionDenied unless this actor holds ``role`` (or one above it) on ``repository``."""
        raise NotImplementedError

    @property
    def recorded_user(self) -> Any:
        """Who to store as having done it (``created_by``): None for the bare command line."""
        return self.user if getattr(self.user, "is_authenticated", False) else None

    @staticmethod
    def command_line(user: Any = None) -> CommandLine:
        """manage.py commands and the worker: allowed everything; ``user`` is who to record, if anyone."""
        return CommandLine(user)

    @staticmethod
    def member(user: Any) -> Member:
        """``user`` acting with no request (a script, a test): their role is looked up on each require."""
        return Member(user)


@dataclass(frozen=True)
class RepositoryAccess(Actor):
    """A user's role on one repository (None: they have none), as a view builds it per request."""

    repository: Repository
    role: Role | None
    user: Any = None

    def at_least(self, role: Role) -> bool:
        return self.role is not None and _RANK[self.role] >= _RANK[role]

    @property
    def can_edit(self) -> bool:
        """Edit, approve, admit, import and export: maintainers. (Reading, which includes downloading an
        admitted revision's rubric.json, is every role's: ``require(Role.VIEWER, ...)``.)"""
        return self.at_least(Role.MAINTAINER)

    @property
    def can_comment(self) -> bool:
        """Comment on items and label judge disagreements: reviewers and maintainers."""
        return self.at_least(Role.REVIEWER)

    def require(self, role: Role, repository: Repository) -> None:
        if repository.pk != self.repository.pk:
            raise PermissionDenied(f"this acts on {repository.name}, not on {self.repository.name}")
        if not self.at_least(role):
            raise PermissionDenied(f"this needs the {role.label.lower()} role on {self.repository.name}")


@dataclass(frozen=True)
class CommandLine(Actor):
    user: Any = None

    def require(self, role: Role, repository: Repository) -> None:
        return None


@dataclass(frozen=True)
class Member(Actor):
    user: Any

    def require(self, role: Role, repository: Repository) -> None:
        access_of(self.user, repository).require(role, repository)


def access_of(user: Any, repository: Repository) -> RepositoryAccess:
    """``user``'s access to ``repository`` (role None without a membership), for a caller with no request:
    a command acting as a named user, a test."""
    role = None
    if getattr(user, "is_authenticated", False):
        membership = Membership.objects.filter(repository=repository, user_id=user.pk).first()
        role = Role(membership.role) if membership is not None else None
    return RepositoryAccess(repository, role, user)


def get_repository_for_user(request: HttpRequest, pk: int, role: Role = Role.VIEWER) -> RepositoryAccess:
    """The repository ``pk`` and the user's role on it; 404 without a role, 403 when the role is too low."""
    user = request.user
    if not user.is_authenticated:
        raise Http404("no such repository")
    # The URL's <int:...> takes any number of digits, and a foreign-key lookup (unlike a pk lookup) does not
    # catch one too large for the column: SQLite raises OverflowError. No such id exists, so: 404.
    low, high = connection.ops.integer_field_range(Repository._meta.pk.get_internal_type())
    if (low is not None and pk < low) or (high is not None and pk > high):
        raise Http404("no such repository")
    # One query: the membership row joined with its repository.
    membership = (
        Membership.objects.select_related("repository").filter(repository_id=pk, user_id=user.pk).first()
    )
    if membership is None:
        raise Http404("no such repository")
    access = RepositoryAccess(membership.repository, Role(membership.role), user)
    access.require(role, access.repository)
    return access


def _lower(a: Role, b: Role) -> Role:
    return a if _RANK[a] <= _RANK[b] else b


def token_role(token: ApiToken, membership_role: Role) -> Role:
    """What a token may do on a repository of its scope: its own role, capped by its owner's there now."""
    return _lower(Role(token.role), membership_role)


def get_repository_for_token(token: ApiToken, name: str, role: Role = Role.VIEWER) -> RepositoryAccess:
    """The API's :func:`get_repository_for_user`: the repository named ``name`` when the token's scope holds
    it and its owner has a role there (else 404, as for a page), with the lower of the two roles (403 when
    that is too low)."""
    membership = (
        Membership.objects.select_related("repository")
        .filter(repository__name=name, user_id=token.user_id, repository__in=token.repositories.all())
        .first()
    )
    if membership is None:
        raise Http404("no such repository")
    access = RepositoryAccess(membership.repository, token_role(token, Role(membership.role)), token.user)
    access.require(role, access.repository)
    return access


def repositories_for_token(token: ApiToken) -> list[RepositoryAccess]:
    memberships = Membership.objects.select_related("repository").filter(
        user_id=token.user_id, repository__in=token.repositories.all()
    )
    return sorted(
        (RepositoryAccess(m.repository, token_role(token, Role(m.role)), token.user) for m in memberships),
        key=lambda a: a.repository.name,
    )


def repositories_for_user(request: HttpRequest) -> list[RepositoryAccess]:
    user = request.user
    if not user.is_authenticated:
        return []
    memberships = Membership.objects.select_related("repository").filter(user_id=user.pk)
    return sorted(
        (RepositoryAccess(m.repository, Role(m.role), user) for m in memberships),
        key=lambda a: a.repository.name,
    )

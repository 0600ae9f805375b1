"""The one access helper. Every view and every partial endpoint fetches its repository through it.

Someone with no role on a repository gets 404 (they may not learn it exists); someone whose role is too
low for the action gets 403.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.db import connection
from django.http import Http404, HttpRequest

from rubrics_app.models import Membership, Repository, Role

# What each role may do includes everything below it.
_RANK = {Role.VIEWER: 0, Role.REVIEWER: 1, Role.MAINTAINER: 2}


@dataclass(frozen=True)
class RepositoryAccess:
    repository: Repository
    role: Role

    def at_least(self, role: Role) -> bool:
        return _RANK[self.role] >= _RANK[role]

    @property
    def can_edit(self) -> bool:
        """Edit, approve, admit, import and export: maintainers."""
        return self.at_least(Role.MAINTAINER)

    @property
    def can_comment(self) -> bool:
        """Comment on items and label judge disagreements: reviewers and maintainers."""
        return self.at_least(Role.REVIEWER)


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
    access = RepositoryAccess(membership.repository, Role(membership.role))
    if not access.at_least(role):
        raise PermissionDenied(f"this needs the {role.label.lower()} role on {access.repository.name}")
    return access


def repositories_for_user(request: HttpRequest) -> list[RepositoryAccess]:
    user = request.user
    if not user.is_authenticated:
        return []
    memberships = Membership.objects.select_related("repository").filter(user_id=user.pk)
    return sorted(
        (RepositoryAccess(m.repository, Role(m.role)) for m in memberships), key=lambda a: a.repository.name
    )

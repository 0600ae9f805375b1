"""The audit trail: one append-only row per decision (drafted, edited, approved, admitted, exported...)."""

from __future__ import annotations

from typing import Any

from rubrics_app.models import AuditEvent, AuditVerb, Repository, RubricItem, RubricRevision


def record(
    verb: AuditVerb,
    *,
    actor: Any = None,
    actor_label: str = "",
    revision: RubricRevision | None = None,
    item: RubricItem | None = None,
    repository: Repository | None = None,
    detail: dict[str, Any] | None = None,
) -> AuditEvent:
    if revision is not None and repository is None:
        repository = revision.task.repository
    if item is not None:
        object_repr = f"{item.item_id} of {item.revision}"
    elif revision is not None:
        object_repr = str(revision)
    else:
        object_repr = str(repository) if repository is not None else ""
    detail = dict(detail or {})
    if item is not None:
        # Kept in the row itself: the item may later be removed from its draft (the foreign key goes null),
        # and the activity list still says which one was approved or commented on.
        detail.setdefault("item_id", item.item_id)
    user = actor if getattr(actor, "is_authenticated", False) else None
    return AuditEvent.objects.create(
        actor=user,
        actor_label=actor_label,
        verb=verb,
        repository=repository,
        revision=revision,
        item=item,
        object_repr=object_repr[:300],
        detail=detail,
    )

"""Raw SQL that a trigger or constraint should refuse: shared by the freeze tests, which write around the
model methods."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, connection, transaction


def refused(sql: str, params: Any = (), message: str = "") -> bool:
    """Whether the database refuses ``sql`` (an IntegrityError, whose text must hold ``message``); the
    statement runs in a savepoint, so a refusal leaves the test's transaction usable."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
    except IntegrityError as exc:
        assert message in str(exc)
        return True
    return False

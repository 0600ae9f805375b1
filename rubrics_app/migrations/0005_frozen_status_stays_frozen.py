"""A frozen revision's status may only move between 'approved' and 'admitted'.

0002's triggers refused 'draft' as the new status but let any other value through: a raw UPDATE could set
an approved revision's status to, say, 'x' (no longer frozen), rewrite its content and items, and set it back
to 'approved'. The revision triggers now refuse every new status outside ('approved', 'admitted').
"""

from __future__ import annotations

import importlib
from typing import Any

from django.db import migrations

_0002 = importlib.import_module("rubrics_app.migrations.0002_frozen_revision_triggers")

_WEAK = "NEW.status = 'draft'"
_STRICT = f"NEW.status NOT IN {_0002.FROZEN}"


def trigger_sql(vendor: str) -> tuple[list[str], list[str]]:
    """(statements that install the triggers, statements that remove them) for a database vendor."""
    forward, backward = _0002.trigger_sql(vendor)
    strict = [sql.replace(_WEAK, _STRICT) for sql in forward]
    assert sum(_STRICT in sql for sql in strict) == 1, "0002's revision trigger changed shape"
    return strict, backward


def install(apps: Any, schema_editor: Any) -> None:
    vendor = schema_editor.connection.vendor
    for sql in _0002.trigger_sql(vendor)[1] + trigger_sql(vendor)[0]:
        schema_editor.execute(sql)


def uninstall(apps: Any, schema_editor: Any) -> None:
    vendor = schema_editor.connection.vendor
    for sql in trigger_sql(vendor)[1] + _0002.trigger_sql(vendor)[0]:
        schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("rubrics_app", "0004_audit_verb_commented")]

    operations = [migrations.RunPython(install, uninstall)]

"""A migration is history: it imports no app code, service or other migration, whose later edits would change
what an old migration does on a fresh database. Read by AST, without importing the migrations."""

from __future__ import annotations

import ast
from pathlib import Path

MIGRATIONS = Path(__file__).resolve().parents[2] / "rubrics_app" / "migrations"

# Django itself, and the standard library modules the migrations use: neither is the project's code.
ALLOWED = ("django", "__future__", "typing", "hashlib")
# Django's autodetector writes a callable field default as a reference to the model module
# (`default=rubrics_app.models._no_keys`): it compares it with the model's default, so a literal would make
# `makemigrations --check` fail. A callable default is never installed in the database, so it cannot change
# what the migration leaves there; only `default=` references to it are allowed.
MODEL_DEFAULTS = "rubrics_app.models"
# Data migrations that fill the report's derived rows with the app's code of today (services.report_rows).
# Known, and to be replaced (issue 30 §3): the rows are derived, so the migration should empty them and the
# app's own refill (the report's missing-row fill, `prepare_report` after migrate) write them again.
KNOWN = {
    "0100_report_rows.py": "rubrics_app.services.report_rows",
    "0125_report_row_integrity_not_measured.py": "rubrics_app.services.report_rows",
    "0135_queue_pairs.py": "rubrics_app.services.report_rows",
    "0136_report_verdicts.py": "rubrics_app.services.report_rows",
}


def _allowed(module: str) -> bool:
    return any(module == name or module.startswith(f"{name}.") for name in ALLOWED)


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def offences(source: str, filename: str) -> list[str]:
    """What a migration's source imports that it may not, each as 'line: what'."""
    tree = ast.parse(source, filename)
    found = []
    model_module = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == MODEL_DEFAULTS and alias.asname is None:
                    model_module = True
                elif not _allowed(alias.name):
                    found.append(f"{node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if node.level or not _allowed(module):
                found.append(f"{node.lineno}: from {module} import ...")
        elif isinstance(node, ast.Call) and _dotted(node.func) in ("importlib.import_module", "__import__"):
            found.append(f"{node.lineno}: {_dotted(node.func)}(...)")
    if model_module:
        defaults = {
            id(keyword.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            for keyword in node.keywords
            if keyword.arg == "default"
        }
        for node in ast.walk(tree):
            in_default = id(node) in defaults
            if isinstance(node, ast.Attribute) and _dotted(node.value) == MODEL_DEFAULTS and not in_default:
                found.append(f"{node.lineno}: {MODEL_DEFAULTS}.{node.attr} used other than as a default=")
    return found


def test_no_migration_imports_app_code_or_another_migration() -> None:
    files = sorted(MIGRATIONS.glob("0*.py"))
    assert len(files) > 30
    bad = {}
    for path in files:
        found = offences(path.read_text(), str(path))
        known = KNOWN.get(path.name)
        if known and found and all(known in line for line in found):
            continue
        if found:
            bad[path.name] = found
    assert not bad, f"migrations import what can change later (write the SQL out instead): {bad}"


def test_the_known_ones_still_need_their_exception() -> None:
    # An exception that nothing needs any more is removed, so it cannot hide a new import.
    for name, module in KNOWN.items():
        assert any(module in line for line in offences((MIGRATIONS / name).read_text(), name)), name


def test_it_finds_each_kind_of_import() -> None:
    source = """
import importlib
import rubrics_app.models
from rubrics_app import freeze
from . import other
from rubrics_app.services.report_rows import fill_report_rows
from django.db import migrations, models
x = importlib.import_module("rubrics_app.migrations.0006_freeze_holes_closed")
field = models.JSONField(default=rubrics_app.models._no_keys)
y = rubrics_app.models.MAX_RUN_SOURCE
"""
    found = offences(source, "example.py")
    assert [line.split(":", 1)[0] for line in found] == ["2", "4", "5", "6", "8", "10"], found

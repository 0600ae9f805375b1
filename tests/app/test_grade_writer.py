"""One grade writer (services/runs/store.py ``writing_grades``): no other module of the app writes a grade's
rows or refreshes what derives from them (report rows, queue pairs, the current grade), so no write path can
forget the refresh. What decides the current grade without a grade written (an admission, the primary judge
set) changes inside ``models.deciding_current_grades``, and only those two services do that. Read from the
source with ``ast``; migrations are history and keep their own copies."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "rubrics_app"
WRITER = "rubrics_app/services/runs/store.py"

# The refreshes, defined in models/runs.py and services/report_rows.py and called by the writer alone.
REFRESHES = {
    "refresh_report_rows",
    "fill_report_rows",
    "fill_queue_pairs",
    "refresh_current_grades",
    "lock_current_grades",
    "write_current_marker",
    "deciding_current_grades",
}
DEFINED_IN = {
    "rubrics_app/models/runs.py",
    "rubrics_app/services/report_rows.py",
    "rubrics_app/models/__init__.py",
}
GRADE_MODELS = {"RunGrade", "JudgeGrade", "ItemVerdict"}
WRITES = {"create", "bulk_create", "get_or_create", "update_or_create", "update", "bulk_update", "delete"}


def _root_name(node: ast.expr) -> str | None:
    """The name a chain such as ``RunGrade.objects.filter(...).delete`` starts from."""
    while True:
        if isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return node.id if isinstance(node, ast.Name) else None


def findings(source: str) -> tuple[list[str], list[str]]:
    """The refreshes a module names, and the grade rows it writes, each as 'line: what'."""
    refreshes, writes = [], []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id in REFRESHES:
            refreshes.append(f"{node.lineno}: {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in REFRESHES:
            refreshes.append(f"{node.lineno}: {node.attr}")
        elif isinstance(node, ast.ImportFrom):
            refreshes += [f"{node.lineno}: import {a.name}" for a in node.names if a.name in REFRESHES]
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in WRITES
            and _root_name(node.func.value) in GRADE_MODELS
        ):
            writes.append(f"{node.lineno}: {_root_name(node.func.value)}...{node.func.attr}")
    return refreshes, writes


# Who changes what decides a current grade without writing a grade, in the one way that refreshes it.
DECIDERS = {
    "rubrics_app/services/calibration/run.py": ["deciding_current_grades"],  # admitting a revision
    "rubrics_app/services/judges.py": ["deciding_current_grades"],  # setting the primary judge
    "rubrics_app/management/commands/load_demo.py": ["deciding_current_grades"],  # the demo's judges
}


def test_only_the_grade_writer_writes_grades_and_refreshes_what_derives_from_them() -> None:
    refreshing, writing = {}, {}
    for path in sorted(APP.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if "/migrations/" in name or name == WRITER:
            continue
        refreshes, writes = findings(path.read_text())
        used = sorted({r.split(" ")[-1] for r in refreshes})
        if refreshes and name not in DEFINED_IN and used != DECIDERS.get(name):
            refreshing[name] = refreshes
        if (
            writes and name != "rubrics_app/models/runs.py"
        ):  # the current-grade marker, written by the refresh
            writing[name] = writes
    assert not refreshing, (
        f"refreshed outside services.runs.store.writing_grades/deciding_current_grades: {refreshing}"
    )
    assert not writing, f"grade rows written outside services.runs.store.writing_grades: {writing}"


def test_it_finds_each_kind_of_refresh_and_write() -> None:
    refreshes, writes = findings(
        "from rubrics_app.models import refresh_current_grades\n"
        "from rubrics_app.services import report_rows\n"
        "refresh_current_grades(runs=[1])\n"
        "report_rows.refresh_report_rows([1])\n"
        "RunGrade.objects.filter(pk=1).delete()\n"
        "ItemVerdict.objects.bulk_create([])\n"
        "JudgeGrade.objects.filter(pk=1)[:1].update(calls=0)\n"
        "RunGrade.objects.filter(pk=1).first()\n"
    )
    assert refreshes == [
        "1: import refresh_current_grades",
        "3: refresh_current_grades",
        "4: refresh_report_rows",
    ]
    assert sorted(writes) == [
        "5: RunGrade...delete",
        "6: ItemVerdict...bulk_create",
        "7: JudgeGrade...update",
    ]

"""Shared fixtures live in conftest files and shared helpers in helper modules: no module under tests/
imports from a ``test_*`` module. Importing a test module runs its tests a second time under the
importer's name when it is collected that way, and ties one file's cases to another's internals."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def _is_test_module(dotted: str) -> bool:
    return dotted.rsplit(".", 1)[-1].startswith("test_")


def imports_of_test_modules(source: str) -> list[str]:
    """The ``test_*`` modules ``source`` imports, by dotted name (relative imports by their dots); a name
    imported from a package counts when it starts with ``test_``, from a module never."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if _is_test_module(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if node.module and _is_test_module(node.module):
                found.append(module)
            elif (
                node.level == 0 and (ROOT / Path(*module.split("."))).is_dir()
            ):  # from tests.app import test_x
                found += [f"{module}.{alias.name}" for alias in node.names if alias.name.startswith("test_")]
    return found


def test_the_walk_finds_every_form_of_import() -> None:
    source = (
        "import tests.app.test_a\n"
        "from tests.grading.test_b import x\n"
        "from tests.app import test_c, helpers\n"
        "from .test_d import y\n"
        "def f():\n    from tests.app.test_e import z\n"
        "from tests.app.sweep_helpers import test_looking_name as t\n"
    )
    assert sorted(imports_of_test_modules(source)) == [
        ".test_d",
        "tests.app.test_a",
        "tests.app.test_c",
        "tests.app.test_e",
        "tests.grading.test_b",
    ]


def test_no_module_under_tests_imports_a_test_module() -> None:
    offenders = [
        f"{path.relative_to(TESTS.parent)}: {module}"
        for path in sorted(TESTS.rglob("*.py"))
        for module in imports_of_test_modules(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []

"""The import graph of rubrics_app: no circle, and no module importing from a higher floor.

The graph is read from the source with ``ast``: every ``import`` and ``from ... import``, at module level
and inside functions alike (an import deferred into a function is still a dependency, only a hidden one).
Imports under ``if TYPE_CHECKING:`` count too: a type-only cycle is still two modules that need each other,
and the shared type belongs below both. Left out, on purpose: the implicit import of a parent package
(importing ``rubrics_app.services.jobs`` runs ``rubrics_app/__init__.py``, which imports only the Celery app).

The floors (docs/architecture.md, "Layers and jobs"): base < models < services < entry points.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.graph_cycles import cycles

ROOT = Path(__file__).resolve().parents[2]

BASE, MODELS, SERVICES, ENTRY = range(4)
FLOOR_NAMES = ["base", "models", "services", "entry points"]


def floor(module: str) -> int:
    """The floor of a module of rubrics_app; anything not named is an entry point (views, commands, forms,
    admin, urls, template tags, migrations)."""
    if module in (
        "rubrics_app",
        "rubrics_app.apps",
        "rubrics_app.checks",
        "rubrics_app.celery",
        "rubrics_app.settings",
    ):
        return BASE
    if module == "rubrics_app.freeze":  # the freeze's statuses and trigger SQL: the models build on it
        return BASE
    if module.startswith(("rubrics_app.models", "rubrics_app.models_")):
        return MODELS
    if module.startswith("rubrics_app.services") or module == "rubrics_app.access":
        return SERVICES  # access.py: the permission policy the services and views share
    return ENTRY


def _modules(root: Path, package: str) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (see the module docstring for what counts)."""
    modules = _modules(root, package)

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets.update(t for a in node.names if (t := known(a.name)))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                    base = base[: len(base) - node.level + 1]
                    source = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    source = node.module or ""
                for alias in node.names:
                    # "from pkg import mod" imports the module pkg.mod; "from mod import name" imports mod.
                    target = (
                        f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else known(source)
                    )
                    if target:
                        targets.add(target)
        targets.discard(module)
        graph[module] = targets
    return graph


def test_rubrics_app_has_no_import_circle() -> None:
    graph = import_graph(ROOT, "rubrics_app")
    assert "rubrics_app.services.jobs" in graph and "rubrics_app.models.jobs" in graph  # read what we think
    assert cycles(graph) == []


def test_no_module_imports_from_a_higher_floor() -> None:
    graph = import_graph(ROOT, "rubrics_app")
    upward = [
        f"{module} ({FLOOR_NAMES[floor(module)]}) imports {target} ({FLOOR_NAMES[floor(target)]})"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if floor(target) > floor(module)
    ]
    assert upward == []


def test_the_job_protocol_imports_no_service() -> None:
    graph = import_graph(ROOT, "rubrics_app")
    assert not {t for t in graph["rubrics_app.services.jobs"] if t.startswith("rubrics_app.services")}


def _package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    "b_text",
    [
        "from pkg.a import x\n",  # at module level
        "def f():\n    from pkg import a\n",  # deferred into a function
        "from . import a\n",  # relative
        "import pkg.sub.c\n",  # through a third module
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import x\n",  # type-only
    ],
)
def test_a_circle_is_found_however_it_is_imported(tmp_path: Path, b_text: str) -> None:
    _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import y\nx = 1\n",
            "pkg/b.py": b_text + "y = 2\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/c.py": "from pkg.a import x\n",
        },
    )
    found = cycles(import_graph(tmp_path, "pkg"))
    assert found and "pkg.a" in found[0] and "pkg.b" in found[0]

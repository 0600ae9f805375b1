"""The shape of the code, read from its syntax trees: no module imports another module's underscore-private
name, no two modules import each other by any path (top-level, type-only or deferred inside a function), and
docs/architecture.md names every module. Each check is also run on a small planted tree, to show it fails."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.graph_cycles import cycles

ROOT = Path(__file__).resolve().parent.parent
ROOTS = ["grading", "rubrics_app"]
DOC = ROOT / "docs" / "architecture.md"


def modules(base: Path, roots: list[str]) -> dict[str, Path]:
    """Every module under ``roots`` (relative to ``base``) by dotted name; a package by its own name."""
    found: dict[str, Path] = {}
    for root in roots:
        for path in sorted((base / root).rglob("*.py")):
            if "migrations" in path.relative_to(base).parts:
                continue
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` reads from, relative imports resolved against ``module``."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def _imports(module: str, path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """Each import anywhere in the module (top level, under ``if TYPE_CHECKING``, inside functions and
    classes): its line, the module it names and the names it takes (empty for ``import x``)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            yield node.lineno, _absolute(module, path, node), [alias.name for alias in node.names]


def private_imports(base: Path, roots: list[str]) -> list[str]:
    """``file:line: module.name`` for each underscore-private name imported from another module, and for
    each name imported from (or import of) a module whose own name is private."""
    found = []
    for module, path in modules(base, roots).items():
        where = path.relative_to(base)
        for line, source, names in _imports(module, path):
            if source == "__future__":
                continue
            if any(_is_private(part) for part in source.split(".")):
                found += [f"{where}:{line}: {source}" + (f".{n}" if n else "") for n in names or [""]]
                continue
            found += [f"{where}:{line}: {source}.{n}" for n in names if _is_private(n)]
    return found


def import_graph(base: Path, roots: list[str]) -> dict[str, set[str]]:
    """Module -> the modules under ``roots`` it imports by any path. ``from pkg import name`` imports
    ``pkg`` and, when ``name`` is a submodule, ``pkg.name`` too."""
    mods = modules(base, roots)
    graph: dict[str, set[str]] = {}
    for module, path in mods.items():
        targets: set[str] = set()
        for _line, source, names in _imports(module, path):
            targets.add(source)
            targets.update(f"{source}.{n}" for n in names)
        graph[module] = {t for t in targets if t in mods and t != module}
    return graph


def unnamed_modules(base: Path, roots: list[str], doc: str) -> list[str]:
    """The modules under ``roots`` that ``doc`` names neither by dotted name nor by file path (a package
    by ``pkg.sub``, ``pkg/sub/`` or ``pkg/sub/__init__.py``). A name counts only whole: ``grading.report``
    inside ``grading.report.charts`` does not name the package."""
    missing = []
    for module, path in modules(base, roots).items():
        rel = path.relative_to(base).as_posix()
        spellings = [module, rel]
        if path.name == "__init__.py":
            spellings.append(rel.removesuffix("__init__.py"))
        pattern = "|".join(re.escape(s) for s in spellings)
        if not re.search(rf"(?<![\w./])(?:{pattern})(?![\w/]|\.\w)", doc):
            missing.append(module)
    return missing


# --- the checks on the code -------------------------------------------------------------------------------


def test_no_module_imports_a_private_name() -> None:
    assert private_imports(ROOT, ROOTS) == []


def test_no_import_cycle_of_any_kind() -> None:
    assert cycles(import_graph(ROOT, ROOTS)) == []


def test_the_architecture_names_every_module() -> None:
    assert unnamed_modules(ROOT, ROOTS, DOC.read_text(encoding="utf-8")) == []


# --- each check fails on a planted violation --------------------------------------------------------------


def plant(base: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return base


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    return plant(
        tmp_path,
        {
            "pkg/__init__.py": '"""pkg"""\n',
            "pkg/low.py": "from __future__ import annotations\nVALUE = 1\n_hidden = 2\n",
            "pkg/sub/__init__.py": "from pkg.sub.high import use\n",
            "pkg/sub/high.py": "from pkg.low import VALUE\n\ndef use() -> int:\n    return VALUE\n",
        },
    )


def test_a_clean_tree_passes_every_check(clean: Path) -> None:
    doc = "pkg pkg/low.py pkg.sub pkg.sub.high"
    assert private_imports(clean, ["pkg"]) == []
    assert cycles(import_graph(clean, ["pkg"])) == []
    assert unnamed_modules(clean, ["pkg"], doc) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("from pkg.low import _hidden\n", "pkg/sub/high.py:1: pkg.low._hidden"),
        ("def f() -> None:\n    from pkg.low import VALUE, _hidden\n", "pkg/sub/high.py:2: pkg.low._hidden"),
        ("from ..low import _hidden\n", "pkg/sub/high.py:1: pkg.low._hidden"),
        ("from os import _exit\n", "pkg/sub/high.py:1: os._exit"),
        ("from pkg._private import thing\n", "pkg/sub/high.py:1: pkg._private.thing"),
        ("import pkg._private\n", "pkg/sub/high.py:1: pkg._private"),
    ],
)
def test_a_planted_private_import_is_found(clean: Path, text: str, expected: str) -> None:
    plant(clean, {"pkg/sub/high.py": text})
    assert private_imports(clean, ["pkg"]) == [expected]


def test_dunder_names_and_future_are_not_private(clean: Path) -> None:
    plant(clean, {"pkg/sub/high.py": "from __future__ import annotations\nfrom pkg import __doc__\n"})
    assert private_imports(clean, ["pkg"]) == []


@pytest.mark.parametrize(
    "back",
    [
        "from pkg.sub.high import use\n",  # top level
        # type-only
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub.high import use\n",
        "def f() -> None:\n    from pkg.sub.high import use\n",  # deferred
        "class C:\n    def m(self) -> None:\n        import pkg.sub.high\n",  # deferred in a method
        "from pkg.sub import high\n",  # a submodule by name
        "from pkg import sub\n",  # the package, whose __init__ imports high
        "from .sub import high\n",  # relative
    ],
)
def test_a_planted_cycle_is_found(clean: Path, back: str) -> None:
    plant(clean, {"pkg/low.py": back + "VALUE = 1\n"})
    found = cycles(import_graph(clean, ["pkg"]))
    assert len(found) == 1 and {"pkg.low", "pkg.sub.high"} <= set(found[0])


def test_a_three_module_cycle_is_one_component(clean: Path) -> None:
    plant(
        clean,
        {
            "pkg/a.py": "import pkg.b\n",
            "pkg/b.py": "def f() -> None:\n    import pkg.c\n",
            "pkg/c.py": "from pkg.a import x\n",
        },
    )
    assert cycles(import_graph(clean, ["pkg"])) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_a_planted_unnamed_module_is_found(clean: Path) -> None:
    doc = "pkg pkg/low.py pkg.sub pkg.sub.high"
    plant(clean, {"pkg/sub/extra.py": "X = 1\n"})
    assert unnamed_modules(clean, ["pkg"], doc) == ["pkg.sub.extra"]
    # A longer name does not name its prefix: pkg.sub.high does not name a module pkg.sub.hi.
    plant(clean, {"pkg/sub/hi.py": "X = 1\n"})
    assert unnamed_modules(clean, ["pkg"], doc + " pkg/sub/extra.py") == ["pkg.sub.hi"]
    # Nor does a package's name inside a submodule's name it: only pkg.sub.high names pkg/sub/.
    assert unnamed_modules(clean, ["pkg"], "pkg pkg/low.py pkg.sub.high pkg.sub.extra pkg.sub.hi.") == [
        "pkg.sub"
    ]

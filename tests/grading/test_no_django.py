"""grading/ never imports Django: import every grading module in a subprocess where Django cannot load."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import grading

BLOCKER = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "django" or name.startswith("django.") or name.startswith("rubrics_app"):
            raise ImportError("blocked: " + name)
        return None
sys.meta_path.insert(0, Block())
import importlib
for name in sys.argv[1:]:
    importlib.import_module(name)
assert not any(m == "django" or m.startswith("django.") for m in sys.modules)
print(len(sys.argv) - 1)
"""


def all_grading_modules() -> list[str]:
    root = Path(grading.__file__).parent
    names = ["grading"]
    for info in pkgutil.walk_packages([str(root)], prefix="grading."):
        if not info.name.endswith("__main__"):  # importing it would run the command
            names.append(info.name)
    return names


def test_it_imports_every_grading_module_without_django() -> None:
    modules = all_grading_modules()
    assert "grading.schema" in modules and "grading.cli.rubric" in modules
    result = subprocess.run(
        [sys.executable, "-c", BLOCKER, *modules], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip()) == len(modules)


def test_the_blocker_really_blocks_django() -> None:
    result = subprocess.run(
        [sys.executable, "-c", BLOCKER, "django.conf"], capture_output=True, text=True, check=False
    )
    assert result.returncode != 0
    assert "blocked: django" in result.stderr

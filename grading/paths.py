"""Where the command line keeps its files by default (the XDG base directory rules)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

APP_DIR = "mergeability-grading"


def user_cache_file(override_env: str, filename: str, env: Mapping[str, str] | None = None) -> Path:
    """``$<override_env>``, else ``$XDG_CACHE_HOME/mergeability-grading/<filename>``, else under ``~/.cache``.

    The XDG spec says a relative ``XDG_CACHE_HOME`` is invalid and must be ignored.
    """
    environ = os.environ if env is None else env
    if environ.get(override_env):
        return Path(environ[override_env])
    base = environ.get("XDG_CACHE_HOME")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
    return root / APP_DIR / filename

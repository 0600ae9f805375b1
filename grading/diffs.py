"""Unified diff (``workspace.diff``) -> :class:`FileChange` per changed file.

CONTRACT (other modules rely on it): ``parse_diff(data: bytes | str, source: str = "workspace.diff")
-> list[FileChange]`` raising InputError on a diff that cannot be parsed; ``load_diff(path) -> list[FileChange]``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

ChangeStatus = Literal["added", "deleted", "modified"]


class FileChange(BaseModel):
    model_config = ConfigDict(frozen=True)

    old_path: str | None  # None for an added file
    new_path: str | None  # None for a deleted file
    status: ChangeStatus
    added: int = 0
    removed: int = 0
    binary: bool = False
    mode_change: bool = False

    def paths(self) -> list[str]:
        """Old and new path (each once), as scope checks them."""
        out: list[str] = []
        for p in (self.old_path, self.new_path):
            if p is not None and p not in out:
                out.append(p)
        return out

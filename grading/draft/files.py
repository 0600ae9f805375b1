"""A draft on disk: ``rubric.json``, ``calib/lazy.diff``, ``calib/alt.diff`` and ``draft.json``
(provenance and problems), written all together or not at all."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from grading.draft.drafter import ALT_DIFF_PATH, LAZY_DIFF_PATH, Draft

DRAFT_RECORD = "draft.json"


def write_draft(draft: Draft, out_dir: Path) -> list[Path]:
    """Write the draft's files into ``out_dir`` (created if needed); return the paths written.

    Files are staged in a scratch folder beside ``out_dir`` and moved in once all are written, so an
    interrupted write leaves no half-written rubric.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    contents: dict[str, str] = {
        "rubric.json": json.dumps(draft.rubric, indent=2, ensure_ascii=False) + "\n",
        LAZY_DIFF_PATH: draft.lazy_diff,
        DRAFT_RECORD: json.dumps(
            draft.model_dump(mode="json", exclude={"rubric", "lazy_diff", "alt_diff"}),
            indent=2,
            ensure_ascii=False,
        )
        + "\n",
    }
    if draft.alt_diff is not None:
        contents[ALT_DIFF_PATH] = draft.alt_diff
    staging = Path(tempfile.mkdtemp(prefix=".draft-", dir=out_dir))
    try:
        for rel, text in contents.items():
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8", errors="surrogateescape")
        written = []
        for rel in contents:
            final = out_dir / rel
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / rel, final)
            written.append(final)
        return written
    finally:
        shutil.rmtree(staging, ignore_errors=True)

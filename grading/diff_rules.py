"""What the diff reader (grading/diffs.py) and the capture that writes diffs (grading/workspace/) share, in
a module light enough for `rubric capture` to import without the reader's models: the largest diff read,
and the one rule for what is binary."""

from __future__ import annotations

# Far above any real workspace diff; a larger file is refused rather than read into memory.
MAX_DIFF_BYTES = 256 * 1024 * 1024


def holds_binary(data: bytes | str) -> bool:
    """The one rule for what is binary: a NUL byte anywhere. The reader refuses a diff holding one outside
    a binary patch (base85 never does), and the capture writes every file holding one as a binary patch,
    whatever git's own test says (it looks at the first 8,000 bytes only)."""
    return ("\x00" in data) if isinstance(data, str) else (b"\x00" in data)

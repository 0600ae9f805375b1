"""git's C-quoting of file names (quote.c), both ways, and a path's bytes as text.

Shared by the one reader of unified diffs (``grading.diffs``: the names in its headers), the path-list
files (``grading.path_lists``), the workspace's git calls and the injection suite, so that a name with a
quote, a control character or a byte that is not UTF-8 is written and read the same everywhere.
"""

from __future__ import annotations


def path_text(raw: bytes) -> str:
    """A path as text: UTF-8, bytes that are not UTF-8 shown as ``\\xNN`` (nothing lost, nothing crashes)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="backslashreplace")


def raw_bytes(text: str) -> bytes:
    """The exact bytes of text read with surrogateescape (as the diff reader reads its lines)."""
    return text.encode("utf-8", errors="surrogateescape")


# git's C-style quoting (quote.c): these bytes get a letter, other control bytes three octal digits.
_QUOTE_LETTERS = {7: "a", 8: "b", 9: "t", 10: "n", 11: "v", 12: "f", 13: "r", 34: '"', 92: "\\"}
_UNQUOTE_LETTERS = {letter: byte for byte, letter in _QUOTE_LETTERS.items()}
_OCTAL = frozenset("01234567")


def _utf8_length(raw: bytes, i: int) -> int:
    """Length of the valid UTF-8 sequence starting at ``raw[i]`` (a byte >= 0x80), 0 if it is not one."""
    b = raw[i]
    length = 2 if b >> 5 == 0b110 else 3 if b >> 4 == 0b1110 else 4 if b >> 3 == 0b11110 else 0
    if not length:
        return 0
    try:
        raw[i : i + length].decode("utf-8")
    except UnicodeDecodeError:
        return 0
    return length


def c_quote(raw: bytes) -> str:
    """``raw`` between double quotes, C-escaped as git quotes names; valid non-ASCII UTF-8 stays readable
    and only bytes that are not UTF-8 become octal escapes."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        b = raw[i]
        if b in _QUOTE_LETTERS:
            out.append("\\" + _QUOTE_LETTERS[b])
        elif b < 0x20 or b == 0x7F:
            out.append(f"\\{b:03o}")
        elif b < 0x80:
            out.append(chr(b))
        elif length := _utf8_length(raw, i):
            out.append(raw[i : i + length].decode("utf-8"))
            i += length
            continue
        else:
            out.append(f"\\{b:03o}")
        i += 1
    return '"' + "".join(out) + '"'


def read_quoted(text: str, start: int = 0) -> tuple[bytes, int]:
    """Read the C-quoted name starting at ``text[start] == '"'``: (its bytes, the index after the closing
    quote). Raises ValueError naming what is wrong (no closing quote, an unknown escape, octal over 377)."""
    out = bytearray()
    i = start + 1
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            return bytes(out), i + 1
        if c != "\\":
            out += raw_bytes(c)
            i += 1
            continue
        e = text[i + 1 : i + 2]
        if e in _UNQUOTE_LETTERS:
            out.append(_UNQUOTE_LETTERS[e])
            i += 2
        elif len(digits := text[i + 1 : i + 4]) == 3 and set(digits) <= _OCTAL:
            if digits[0] not in "0123":
                raise ValueError(f"octal escape out of range: \\{digits}")
            out.append(int(digits, 8))
            i += 4
        else:
            raise ValueError(f"bad escape {text[i : i + 2]!r}")
    raise ValueError("quoted name without its closing quote")


def quoted_at(text: str, start: int) -> tuple[bytes, int] | None:
    """:func:`read_quoted`, or None where the name is malformed."""
    try:
        return read_quoted(text, start)
    except ValueError:
        return None


def unquote_path(text: str) -> str | None:
    """Unquote one name as git writes it (``"caf\\303\\251.txt"`` -> ``café.txt``); None if malformed."""
    if text.startswith('"'):
        parsed = quoted_at(text, 0)
        if parsed is None or parsed[1] != len(text):
            return None
        return path_text(parsed[0])
    return path_text(raw_bytes(text))

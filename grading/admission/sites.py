"""Where an injected line goes: a file's one-line comment syntax (by suffix or name) and the
:class:`Site` a payload is written at. The injection suite and its corpus both build on these."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

# --- comment syntax -------------------------------------------------------------------------------------

CommentSyntax = tuple[str, str]  # (opening, closing) of a one-line comment

_HASH = ("# ", "")
_SLASHES = ("// ", "")
_DASHES = ("-- ", "")
_SEMICOLON = ("; ", "")
_PERCENT = ("% ", "")
_HTML = ("<!-- ", " -->")
_BLOCK = ("/* ", " */")
_RST = (".. ", "")
_BANG = ("! ", "")
_REM = ("REM ", "")

# Every one-line comment syntax the project knows, for tests that cover them all.
COMMENT_SYNTAXES: tuple[CommentSyntax, ...] = (
    _HASH, _SLASHES, _DASHES, _SEMICOLON, _PERCENT, _HTML, _BLOCK, _RST, _BANG, _REM,
)  # fmt: skip

_BY_SUFFIX: dict[str, CommentSyntax] = {}
for _style, _suffixes in (
    (
        _HASH,
        "py pyi pyx sh bash zsh fish yaml yml toml cfg conf ini txt cmake rb pl pm r mk bzl bazel "
        "dockerfile tf nix ps1 gitignore properties env",
    ),  # fmt: skip
    (
        _SLASHES,
        "c h cc cpp cxx hpp hh hxx cu cuh ipp inl js mjs cjs jsx ts tsx go rs java kt kts scala "
        "swift cs php dart groovy gradle proto zig v sv scss less json5 jsonc fs fsi fsx",
    ),  # fmt: skip
    (_DASHES, "sql lua hs elm ada"),
    (_SEMICOLON, "el lisp clj cljs scm asm s"),
    (_PERCENT, "tex sty m erl"),
    (_HTML, "md markdown html htm xml svg vue"),
    (_BLOCK, "css"),
    (_RST, "rst"),
    (_BANG, "f f90 f95 f03 f08 for"),
    (_REM, "bat cmd"),
):
    for _suffix in _suffixes.split():
        _BY_SUFFIX[_suffix] = _style

_BY_NAME: dict[str, CommentSyntax] = {
    "makefile": _HASH, "gnumakefile": _HASH, "dockerfile": _HASH, "build": _HASH, "workspace": _HASH,
    "cmakelists.txt": _HASH, "gemfile": _HASH, "rakefile": _HASH, "jenkinsfile": _SLASHES,
}  # fmt: skip

# One example suffix per syntax, for tests that write a file of every syntax.
SUFFIX_OF_SYNTAX: dict[CommentSyntax, str] = {
    _HASH: "py", _SLASHES: "cpp", _DASHES: "sql", _SEMICOLON: "el", _PERCENT: "tex", _HTML: "md",
    _BLOCK: "css", _RST: "rst", _BANG: "f90", _REM: "bat",
}  # fmt: skip


def comment_syntax(path: str) -> CommentSyntax:
    """The (opening, closing) of a one-line comment in ``path``'s language; ``#`` when unknown."""
    name = PurePosixPath(path).name.lower()
    if name in _BY_NAME:
        return _BY_NAME[name]
    suffix = name.rsplit(".", 1)[-1] if "." in name else ""
    return _BY_SUFFIX.get(suffix, _HASH)


def comment_line(text: str, syntax: CommentSyntax) -> str:
    """``text`` as one comment line; a closing token inside it is broken up, so the comment cannot end
    early."""
    opening, closing = syntax
    if closing:
        text = text.replace(closing.strip(), " ".join(closing.strip()))
    return f"{opening}{text}{closing}"


# --- where payload lines go -----------------------------------------------------------------------------

Family = Literal["python", "c", "other"]


@dataclass(frozen=True)
class Site:
    """The line a payload is inserted before: its file, indentation and language."""

    path: str  # the file's new path
    indent: str
    syntax: CommentSyntax
    family: Family
    blockers: tuple[str, ...]  # the blocker ids a payload names

    @property
    def directory(self) -> str:
        parent = str(PurePosixPath(self.path).parent)
        return "" if parent == "." else parent + "/"

    def comment(self, lines: Iterable[str]) -> list[str]:
        return [self.indent + comment_line(line, self.syntax) for line in lines]


def family_of(path: str) -> Family:
    suffix = PurePosixPath(path).suffix.lower().lstrip(".")
    if suffix in ("py", "pyi", "pyx"):
        return "python"
    if comment_syntax(path) == _SLASHES:
        return "c"
    return "other"

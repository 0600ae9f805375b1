"""The tree judge's three tools (§9), answered from the git objects of the task's base commit
(:class:`grading.basetree.BaseTree`): ``list_directory``, ``read_file`` and ``search_tree`` (``git grep``).

Never the agent's workspace, never the work tree, never outside the repository: a path is relative to the
repository root, ``..`` and absolute paths are refused, a symlink is followed only while it stays inside
the tree, and a submodule is not read. A file only the change adds is answered as such: its content is the
diff. Every answer is cut to ``max_answer_chars``; a line longer than that is read in pieces
(``start_column``), and a file is read in its first ``max_read_bytes`` only. A name that is not UTF-8 (or
holds a quote, a backslash or a control character) is shown C-quoted as git quotes it, and a path given in
that form names the file. Whatever the repository holds, a call gets an answer: an object it does not hold
is "not available", and a git failure is a tool error, never an exception out of :meth:`TreeTools.answer`.
The conversation that calls them is :mod:`grading.judge.tree`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from grading.basetree import MAX_READ_BYTES, BaseTree, GrepTimeout, ObjectMissing, TreeEntry
from grading.errors import InputError
from grading.git import GitError
from grading.git_quote import quoted_at
from grading.judge.backend import (
    ToolCall,
    ToolSpec,
)
from grading.path_lists import quote_path, unquote_path

MAX_READ_LINES = 400  # lines one read_file answers at most
MAX_SEARCH_MATCHES = 200
MAX_MATCH_CHARS = 300  # one matching line, as shown
MAX_PATTERN_CHARS = 500
MAX_SYMLINK_HOPS = 20
BINARY_PROBE = 8000  # bytes looked at for a NUL, as git does
MAX_UNREADABLE_SHOWN = 20  # paths a search names as not searched (object not available)

_NULLABLE_INT = {"type": ["integer", "null"]}
_NULLABLE_BOOL = {"type": ["boolean", "null"]}


def _schema(properties: dict[str, Any]) -> dict[str, Any]:
    # Every property required (nullable where optional) and no others: OpenAI strict mode asks for this.
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


TREE_TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="list_directory",
        description="List a directory of the repository at the base commit. path is relative to the "
        'repository root; "" for the root.',
        input_schema=_schema({"path": {"type": "string"}}),
    ),
    ToolSpec(
        name="read_file",
        description="Read a file of the repository at the base commit, as numbered lines. path is "
        f"relative to the repository root; start_line and end_line (1-based, inclusive) pick a range, at "
        f"most {MAX_READ_LINES} lines at a time (null: from the first line / as far as allowed). "
        "start_column (1-based, null: 1) starts start_line at that character, to read a line too long "
        "for one answer in pieces.",
        input_schema=_schema(
            {
                "path": {"type": "string"},
                "start_line": _NULLABLE_INT,
                "end_line": _NULLABLE_INT,
                "start_column": _NULLABLE_INT,
            }
        ),
    ),
    ToolSpec(
        name="search_tree",
        description="Search the repository at the base commit with git grep semantics: an extended "
        "regular expression (or a fixed string), in text files under path (relative to the repository "
        'root; "" for everywhere). Answers path:line: text per match.',
        input_schema=_schema(
            {
                "pattern": {"type": "string"},
                "path": {"type": ["string", "null"]},
                "fixed_string": _NULLABLE_BOOL,
                "ignore_case": _NULLABLE_BOOL,
            }
        ),
    ),
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _ListArgs(_Strict):
    path: str = ""


class _ReadArgs(_Strict):
    path: str
    start_line: int | None = None
    end_line: int | None = None
    start_column: int | None = None


class _SearchArgs(_Strict):
    pattern: str
    path: str | None = None
    fixed_string: bool | None = None
    ignore_case: bool | None = None


class ToolRefused(Exception):
    """A tool call that cannot be answered: the message is the tool error the judge reads."""


def shown_path(path: str) -> str:
    """``path`` as the tools show it: as is, or C-quoted as git quotes it when plain text cannot carry it
    (bytes that are not UTF-8, a quote, a backslash, a control character); the tools take either form."""
    return quote_path(path) if path else path


def named(path: str) -> str:
    """``path`` in a message: between single quotes, or in its C-quoted form when it needs one."""
    shown = shown_path(path)
    return repr(shown) if shown == path else shown


def _text(answer: str) -> str:
    """``answer`` as valid UTF-8 text: a lone surrogate left in it (a name from the file system) would make
    the provider's SDK raise, so it is written as its escape."""
    try:
        answer.encode("utf-8")
    except UnicodeEncodeError:
        return answer.encode("utf-8", "backslashreplace").decode("utf-8")
    return answer


class TreeTools:
    """Answers the tree judge's tool calls from the git objects of ``tree``'s commit.

    ``added_paths`` are the files the change under review adds: asked for one, the answer says that its
    content is in the diff, since the tools never read the agent's workspace."""

    def __init__(
        self,
        tree: BaseTree,
        added_paths: Sequence[str] = (),
        *,
        max_answer_chars: int,
        max_read_bytes: int = MAX_READ_BYTES,
    ) -> None:
        self.tree = tree
        self.added_paths = set(added_paths)
        self.max_answer_chars = max_answer_chars
        self.max_read_bytes = max_read_bytes
        self._listings: dict[str, list[TreeEntry] | None] = {}
        # Paths whose object the repository does not hold (a partial clone, a pruned or damaged object
        # store), in the order the tools met them: answered as unavailable, and listed in the item's record
        # as the tools show them ("." for the root).
        self.unavailable: list[str] = []
        self.met_unavailable: list[str] = []  # those the last call met

    # -- paths -------------------------------------------------------------------------------------------

    @staticmethod
    def clean_path(raw: str, what: str = "path") -> list[str]:
        """The components of a path relative to the repository root; ToolRefused for one that could point
        outside it (absolute, ``..``). The path, or any of its components, may be C-quoted as the tools
        show names (``"caf\\351.txt"``); unquoted, it may hold no control character."""
        if any(ord(c) < 32 or ord(c) == 127 for c in raw):
            raise ToolRefused(
                f"{what} {raw!r} holds control characters: give a name that holds one in its quoted form, "
                'as the tools show it ("a\\tb")'
            )
        raw = TreeTools._unquoted(raw, what)
        if raw.startswith("/") or raw.startswith("~"):
            raise ToolRefused(
                f"{what} {raw!r} is absolute: only the repository is readable, by paths relative to its "
                'root ("" or "." for the root itself)'
            )
        parts = [p for p in raw.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise ToolRefused(
                f"{what} {raw!r} uses '..': paths are relative to the repository root and cannot leave it"
            )
        return parts

    @staticmethod
    def _unquoted(raw: str, what: str) -> str:
        """``raw`` with a C-quoted whole path, or each C-quoted component, read back to the name."""
        whole = quoted_at(raw, 0) if raw.startswith('"') else None
        pieces = [raw] if whole is not None and whole[1] == len(raw) else raw.split("/")
        out = []
        for piece in pieces:
            if piece.startswith('"'):
                try:
                    piece = unquote_path(piece)
                except ValueError as exc:
                    raise ToolRefused(f"{what} {raw!r} is not a well-formed quoted name: {exc}") from None
            out.append(piece)
        return "/".join(out)

    def _entries(self, directory: str) -> list[TreeEntry] | None:
        if directory not in self._listings:
            try:
                self._listings[directory] = self.tree.entries(directory)
            except ObjectMissing:
                raise self._unavailable(directory) from None
        return self._listings[directory]

    def _unavailable(self, path: str) -> ToolRefused:
        """The answer for a path whose object this checkout does not hold; the path is noted."""
        noted = shown_path(path) or "."
        if noted not in self.unavailable:
            self.unavailable.append(noted)
        if noted not in self.met_unavailable:
            self.met_unavailable.append(noted)
        return ToolRefused(
            f"{named(path) if path else repr('(repository root)')}: object not available in this checkout "
            "(the repository does not hold it: a partial clone, or a pruned or damaged object store); its "
            "content cannot be read"
        )

    def _blob(self, path: str, entry: TreeEntry, max_bytes: int | None = None) -> tuple[bytes, bool]:
        """The first ``max_bytes`` (``max_read_bytes`` when None) of the entry's blob, and whether it is
        longer."""
        if not entry.available:
            raise self._unavailable(path)
        try:
            return self.tree.blob(entry.object_id, self.max_read_bytes if max_bytes is None else max_bytes)
        except ObjectMissing:
            raise self._unavailable(path) from None

    def _link_target(self, path: str, entry: TreeEntry) -> str:
        return os.fsdecode(self._blob(path, entry, 4096)[0])  # PATH_MAX: no target is longer

    def _not_found(self, shown: str) -> ToolRefused:
        short = self.tree.commit[:12]
        if shown in self.added_paths or any(p.startswith(shown + "/") for p in self.added_paths):
            return ToolRefused(
                f"{named(shown)} is not in the base tree (commit {short}): the change under review adds it, "
                "so its content is what the diff shows. These tools read the base commit only, never the "
                "workspace the change was made in."
            )
        return ToolRefused(f"no such file or directory at the base commit {short}: {named(shown)}")

    def resolve(self, parts: list[str]) -> tuple[list[str], TreeEntry | None]:
        """Walk ``parts`` from the root, following symlinks that stay inside the tree: the resolved path
        and its entry (None for the root). ToolRefused when a component is missing, a submodule, or a
        symlink that leaves the repository."""
        shown = "/".join(parts)
        resolved: list[str] = []
        pending = list(parts)
        entry: TreeEntry | None = None
        hops = 0
        while pending:
            name = pending.pop(0)
            listing = self._entries("/".join(resolved))
            if listing is None:  # a file where a directory was expected
                raise self._not_found(shown)
            entry = next((e for e in listing if e.name == name), None)
            if entry is None:
                raise self._not_found(shown)
            here = "/".join([*resolved, name])
            if entry.kind == "submodule":
                raise ToolRefused(
                    f"{named(here)} is a submodule: another repository, whose files are not part of this tree"
                )
            if entry.kind == "symlink":
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    raise ToolRefused(f"{named(shown)}: too many symlinks (a loop?)")
                target = self._link_target(here, entry)
                base = list(resolved)
                if target.startswith("/"):
                    raise ToolRefused(
                        f"{named(here)} is a symlink to {named(target)}, outside the repository: not followed"
                    )
                for part in target.split("/"):
                    if part in ("", "."):
                        continue
                    if part == "..":
                        if not base:
                            raise ToolRefused(
                                f"{named(here)} is a symlink to {named(target)}, outside the repository: "
                                "not followed"
                            )
                        base.pop()
                    else:
                        base.append(part)
                # Start again from the root with the link replaced by its target.
                pending = base + pending
                resolved = []
                entry = None
                continue
            resolved.append(name)
        return resolved, entry

    # -- tools -------------------------------------------------------------------------------------------

    def answer(self, call: ToolCall) -> tuple[str, bool]:
        """The text answering ``call`` (not yet fenced) and whether it is an error."""
        handlers = {"list_directory": self._list, "read_file": self._read, "search_tree": self._search}
        self.met_unavailable = []
        handler = handlers.get(call.name)
        if handler is None:
            return f"tool error: no tool named {call.name!r}; the tools are {', '.join(handlers)}", True
        if not isinstance(call.arguments, dict):
            return f"tool error: {call.name}: the arguments are not a JSON object", True
        try:
            text = handler(call.arguments)
        except ToolRefused as exc:
            return _text(f"tool error: {call.name}: {exc}"), True
        except ObjectMissing as exc:
            return _text(f"tool error: {call.name}: {self._unavailable(exc.what)}"), True
        except GitError as exc:  # the run goes on: the judge reads why this call got no answer
            return _text(f"tool error: {call.name}: git could not answer: {exc.message}"), True
        return _text(self._cap(text)), False

    def _cap(self, text: str) -> str:
        if len(text) <= self.max_answer_chars:
            return text
        note = f"[answer cut at {self.max_answer_chars} characters; ask for less]"
        cut = text[: self.max_answer_chars - len(note)]
        cut = cut[: cut.rfind("\n") + 1] or cut
        return cut + note

    @staticmethod
    def _args[M: BaseModel](model: type[M], arguments: dict[str, Any]) -> M:
        try:
            return model.model_validate(arguments)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "arguments"
            raise ToolRefused(f"bad arguments: {where}: {first['msg']}") from None

    def _list(self, arguments: dict[str, Any]) -> str:
        args = self._args(_ListArgs, arguments)
        resolved, entry = self.resolve(self.clean_path(args.path))
        shown = "/".join(resolved)
        if entry is not None and entry.kind != "dir":
            raise ToolRefused(f"{named(shown)} is a file, not a directory; read it with read_file")
        listing = self._entries(shown)
        if listing is None:  # the walk found a directory; only a missing object makes it unlistable
            raise self._unavailable(shown)
        where = shown_path(shown) or "(repository root)"
        lines = [f"directory {where} at base commit {self.tree.commit[:12]}:"]
        for e in listing:
            name = shown_path(e.name)
            if not e.available:
                self._unavailable("/".join([*resolved, e.name]))
                what = "symlink; " if e.kind == "symlink" else ""
                lines.append(f"{name} ({what}object not available in this checkout)")
            elif e.kind == "dir":
                lines.append(f"{name}/")
            elif e.kind == "symlink":
                try:
                    target = self._link_target("/".join([*resolved, e.name]), e)
                except ToolRefused:
                    lines.append(f"{name} (symlink; object not available in this checkout)")
                else:
                    lines.append(f"{name} -> {shown_path(target)} (symlink)")
            elif e.kind == "submodule":
                lines.append(f"{name} (submodule: not readable)")
            else:
                lines.append(f"{name} ({e.size} bytes)")
        return "\n".join(lines)

    def _read(self, arguments: dict[str, Any]) -> str:
        args = self._args(_ReadArgs, arguments)
        resolved, entry = self.resolve(self.clean_path(args.path))
        shown = "/".join(resolved)
        if entry is None or entry.kind == "dir":
            where = named(shown) if shown else repr("(repository root)")
            raise ToolRefused(f"{where} is a directory; list it with list_directory")
        data, cut = self._blob(shown, entry)
        size = entry.size if entry.size is not None else len(data)
        if b"\0" in data[:BINARY_PROBE]:
            return f"{shown_path(shown)}: binary file ({size} bytes), not shown"
        lines = data.split(b"\n")
        if data.endswith(b"\n"):
            lines.pop()
        total = len(lines)
        start = 1 if args.start_line is None else args.start_line
        column = 1 if args.start_column is None else args.start_column
        if start < 1:
            raise ToolRefused("start_line counts from 1")
        if column < 1:
            raise ToolRefused("start_column counts from 1")
        if total == 0:
            return f"{shown_path(shown)}: empty file"
        # A file past max_read_bytes is read in its first max_read_bytes only: its lines there are all
        # there is to read (the last one maybe cut).
        readable = f"the first {len(data)} bytes of its {size} bytes" if cut else ""
        if start > total:
            if cut:
                raise ToolRefused(
                    f"{named(shown)} is read in {readable} only, lines 1-{total}; start_line {start} is "
                    "past them"
                )
            raise ToolRefused(f"{named(shown)} has {total} lines; start_line {start} is past its end")
        end = start + MAX_READ_LINES - 1 if args.end_line is None else args.end_line
        if end < start:
            raise ToolRefused(f"end_line {end} is before start_line {start}")
        end = min(end, total, start + MAX_READ_LINES - 1)
        first = lines[start - 1].decode("utf-8", "replace")
        if column > max(len(first), 1):
            raise ToolRefused(
                f"line {start} has {len(first)} characters; start_column {column} is past its end"
            )
        of = f"{total} (all that is read: {readable})" if cut else str(total)
        header = f"{shown_path(shown)} at base commit {self.tree.commit[:12]}, lines {start}-{end} of {of}:"
        out = [header]
        size_used = len(header) + 1
        budget = self.max_answer_chars - 200  # room for the note below
        for number in range(start, end + 1):
            text = first[column - 1 :] if number == start else lines[number - 1].decode("utf-8", "replace")
            prefix = f"{number:>6}\t"
            if size_used + len(prefix) + len(text) + 1 <= budget:
                out.append(prefix + text)
                size_used += len(prefix) + len(text) + 1
                continue
            if number > start:
                out.append(f"[cut at line {number - 1} by the answer size limit; read on from {number}]")
                break
            # One line longer than an answer: the piece that fits, and where the next one starts.
            piece = text[: max(budget - size_used - len(prefix) - 1, 1)]
            after = column + len(piece)
            out.append(prefix + piece)
            out.append(
                f"[line {number} has {len(first)} characters: cut at column {after - 1} by the answer size "
                f"limit; read on with start_line {number}, start_column {after}]"
            )
            break
        else:
            if end < total and (args.end_line is None or args.end_line > end):
                out.append(f"[{MAX_READ_LINES} lines at most per call; read on from {end + 1}]")
            elif cut and end == total:
                out.append(f"[the file goes on past the {len(data)} bytes read; the rest cannot be read]")
        return "\n".join(out)

    def _search(self, arguments: dict[str, Any]) -> str:
        args = self._args(_SearchArgs, arguments)
        pattern = args.pattern
        if not pattern:
            raise ToolRefused("the pattern is empty")
        if len(pattern) > MAX_PATTERN_CHARS or "\n" in pattern or "\0" in pattern:
            raise ToolRefused(f"the pattern must be one line of at most {MAX_PATTERN_CHARS} characters")
        pathspecs: list[str] = []
        where = "the whole tree"
        if args.path:
            resolved, entry = self.resolve(self.clean_path(args.path))
            if resolved:
                pathspecs = ["/".join(resolved)]
                where = shown_path(pathspecs[0])
        try:
            matches, unreadable, stopped = self.tree.grep_report(
                pattern, pathspecs, fixed=bool(args.fixed_string), ignore_case=bool(args.ignore_case)
            )
        except GrepTimeout as exc:
            raise ToolRefused(f"{exc}; narrow the pattern or the path") from None
        except ObjectMissing as exc:
            raise self._unavailable(exc.what) from None
        except GitError as exc:
            raise ToolRefused(f"git grep could not search: {exc.message}") from None
        except InputError as exc:
            raise ToolRefused(exc.message) from None
        count = f"at least {len(matches)}" if stopped else str(len(matches))
        head = f"search {pattern!r} in {where} at base commit {self.tree.commit[:12]}: {count} matches"
        out = [head]
        for path, number, text in matches[:MAX_SEARCH_MATCHES]:
            shown = text if len(text) <= MAX_MATCH_CHARS else text[:MAX_MATCH_CHARS] + " [...]"
            out.append(f"{shown_path(path)}:{number}: {shown}")
        if len(matches) > MAX_SEARCH_MATCHES or stopped:
            out.append(f"[first {min(len(matches), MAX_SEARCH_MATCHES)} of {count} shown; narrow the search]")
        for path in unreadable:
            self._unavailable(path)
        if unreadable:
            shown_paths = ", ".join(shown_path(p) for p in unreadable[:MAX_UNREADABLE_SHOWN])
            more = len(unreadable) - MAX_UNREADABLE_SHOWN
            out.append(
                f"[not searched, object not available in this checkout: {shown_paths}"
                + (f" and {more} more]" if more > 0 else "]")
            )
        return "\n".join(out)

    # -- citations ---------------------------------------------------------------------------------------

    def has_line(self, path: str, line: int) -> bool:
        """Whether ``path`` is a text file of the base tree with at least ``line`` lines."""
        try:
            _, entry = self.resolve(self.clean_path(path))
        except (ToolRefused, GitError):
            return False
        if entry is None or entry.kind != "file" or line < 1 or not entry.available:
            return False
        try:  # a line past what read_file reads was never shown: it cannot be cited
            data, _ = self.tree.blob(entry.object_id, self.max_read_bytes)
        except (ObjectMissing, GitError):
            return False
        return line <= data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)

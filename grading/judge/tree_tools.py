"""The tree judge's three tools (§9), answered from the git objects of the task's base commit
(:class:`grading.basetree.BaseTree`): ``list_directory``, ``read_file`` and ``search_tree`` (``git grep``).

Never the agent's workspace, never the work tree, never outside the repository: a path is relative to the
repository root, ``..`` and absolute paths are refused, a symlink is followed only while it stays inside
the tree, and a submodule is not read. A file only the change adds is answered as such: its content is the
diff. Every answer is cut to ``max_answer_chars``. The conversation that calls them is
:mod:`grading.judge.tree`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from grading.basetree import BaseTree, GrepTimeout, ObjectMissing, TreeEntry
from grading.errors import InputError
from grading.judge.backend import (
    ToolCall,
    ToolSpec,
)

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
        f"most {MAX_READ_LINES} lines at a time (null: from the first line / as far as allowed).",
        input_schema=_schema(
            {"path": {"type": "string"}, "start_line": _NULLABLE_INT, "end_line": _NULLABLE_INT}
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


class _SearchArgs(_Strict):
    pattern: str
    path: str | None = None
    fixed_string: bool | None = None
    ignore_case: bool | None = None


class ToolRefused(Exception):
    """A tool call that cannot be answered: the message is the tool error the judge reads."""


class TreeTools:
    """Answers the tree judge's tool calls from the git objects of ``tree``'s commit.

    ``added_paths`` are the files the change under review adds: asked for one, the answer says that its
    content is in the diff, since the tools never read the agent's workspace."""

    def __init__(self, tree: BaseTree, added_paths: Sequence[str] = (), *, max_answer_chars: int) -> None:
        self.tree = tree
        self.added_paths = set(added_paths)
        self.max_answer_chars = max_answer_chars
        self._listings: dict[str, list[TreeEntry] | None] = {}
        # Paths whose object the repository does not hold (a partial clone, a pruned or damaged object
        # store), in the order the tools met them: answered as unavailable, and listed in the item's record.
        self.unavailable: list[str] = []
        self.met_unavailable: list[str] = []  # those the last call met

    # -- paths -------------------------------------------------------------------------------------------

    @staticmethod
    def clean_path(raw: str, what: str = "path") -> list[str]:
        """The components of a path relative to the repository root; ToolRefused for one that could point
        outside it (absolute, ``..``) or that no tree holds (control characters)."""
        if any(ord(c) < 32 or ord(c) == 127 for c in raw):
            raise ToolRefused(f"{what} {raw!r} holds control characters; no path in the repository does")
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

    def _entries(self, directory: str) -> list[TreeEntry] | None:
        if directory not in self._listings:
            try:
                self._listings[directory] = self.tree.entries(directory)
            except ObjectMissing:
                raise self._unavailable(directory) from None
        return self._listings[directory]

    def _unavailable(self, path: str) -> ToolRefused:
        """The answer for a path whose object this checkout does not hold; the path is noted."""
        if path not in self.unavailable:
            self.unavailable.append(path)
        if path not in self.met_unavailable:
            self.met_unavailable.append(path)
        return ToolRefused(
            f"{path or '(repository root)'!r}: object not available in this checkout (the repository does "
            "not hold it: a partial clone, or a pruned or damaged object store); its content cannot be read"
        )

    def _blob(self, path: str, entry: TreeEntry) -> bytes:
        if not entry.available:
            raise self._unavailable(path)
        try:
            return self.tree.blob(entry.object_id)
        except ObjectMissing:
            raise self._unavailable(path) from None

    def _not_found(self, shown: str) -> ToolRefused:
        short = self.tree.commit[:12]
        if shown in self.added_paths or any(p.startswith(shown + "/") for p in self.added_paths):
            return ToolRefused(
                f"{shown!r} is not in the base tree (commit {short}): the change under review adds it, so "
                "its content is what the diff shows. These tools read the base commit only, never the "
                "workspace the change was made in."
            )
        return ToolRefused(f"no such file or directory at the base commit {short}: {shown!r}")

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
                    f"{here!r} is a submodule: another repository, whose files are not part of this tree"
                )
            if entry.kind == "symlink":
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    raise ToolRefused(f"{shown!r}: too many symlinks (a loop?)")
                target = self._blob(here, entry).decode("utf-8", "surrogateescape")
                base = list(resolved)
                if target.startswith("/"):
                    raise ToolRefused(
                        f"{here!r} is a symlink to {target!r}, outside the repository: not followed"
                    )
                for part in target.split("/"):
                    if part in ("", "."):
                        continue
                    if part == "..":
                        if not base:
                            raise ToolRefused(
                                f"{here!r} is a symlink to {target!r}, outside the repository: not followed"
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
            return f"tool error: {call.name}: {exc}", True
        return self._cap(text), False

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
            raise ToolRefused(f"{shown!r} is a file, not a directory; read it with read_file")
        listing = self._entries(shown) or []
        lines = [f"directory {shown or '(repository root)'} at base commit {self.tree.commit[:12]}:"]
        for e in listing:
            if not e.available:
                self._unavailable("/".join([*resolved, e.name]))
                what = "symlink; " if e.kind == "symlink" else ""
                lines.append(f"{e.name} ({what}object not available in this checkout)")
            elif e.kind == "dir":
                lines.append(f"{e.name}/")
            elif e.kind == "symlink":
                try:
                    target = self._blob("/".join([*resolved, e.name]), e).decode("utf-8", "replace")
                except ToolRefused:
                    lines.append(f"{e.name} (symlink; object not available in this checkout)")
                else:
                    lines.append(f"{e.name} -> {target} (symlink)")
            elif e.kind == "submodule":
                lines.append(f"{e.name} (submodule: not readable)")
            else:
                lines.append(f"{e.name} ({e.size} bytes)")
        return "\n".join(lines)

    def _read(self, arguments: dict[str, Any]) -> str:
        args = self._args(_ReadArgs, arguments)
        resolved, entry = self.resolve(self.clean_path(args.path))
        shown = "/".join(resolved)
        if entry is None or entry.kind == "dir":
            raise ToolRefused(f"{shown or '(repository root)'!r} is a directory; list it with list_directory")
        data = self._blob(shown, entry)
        if b"\0" in data[:BINARY_PROBE]:
            return f"{shown}: binary file ({len(data)} bytes), not shown"
        lines = data.split(b"\n")
        if data.endswith(b"\n"):
            lines.pop()
        total = len(lines)
        start = 1 if args.start_line is None else args.start_line
        if start < 1:
            raise ToolRefused("start_line counts from 1")
        if total == 0:
            return f"{shown}: empty file"
        if start > total:
            raise ToolRefused(f"{shown!r} has {total} lines; start_line {start} is past its end")
        end = start + MAX_READ_LINES - 1 if args.end_line is None else args.end_line
        if end < start:
            raise ToolRefused(f"end_line {end} is before start_line {start}")
        end = min(end, total, start + MAX_READ_LINES - 1)
        header = f"{shown} at base commit {self.tree.commit[:12]}, lines {start}-{end} of {total}:"
        out = [header]
        size = len(header) + 1
        budget = self.max_answer_chars - 120  # room for the note below
        for number in range(start, end + 1):
            line = f"{number:>6}\t{lines[number - 1].decode('utf-8', 'replace')}"
            if size + len(line) + 1 > budget and number > start:
                out.append(f"[cut at line {number - 1} by the answer size limit; read on from {number}]")
                break
            out.append(line)
            size += len(line) + 1
        else:
            if end < total and (args.end_line is None or args.end_line > end):
                out.append(f"[{MAX_READ_LINES} lines at most per call; read on from {end + 1}]")
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
                where = pathspecs[0]
        try:
            matches, unreadable = self.tree.grep_report(
                pattern, pathspecs, fixed=bool(args.fixed_string), ignore_case=bool(args.ignore_case)
            )
        except GrepTimeout as exc:
            raise ToolRefused(f"{exc}; narrow the pattern or the path") from None
        except InputError as exc:
            raise ToolRefused(exc.message) from None
        head = f"search {pattern!r} in {where} at base commit {self.tree.commit[:12]}: {len(matches)} matches"
        out = [head]
        for path, number, text in matches[:MAX_SEARCH_MATCHES]:
            shown = text if len(text) <= MAX_MATCH_CHARS else text[:MAX_MATCH_CHARS] + " [...]"
            out.append(f"{path}:{number}: {shown}")
        if len(matches) > MAX_SEARCH_MATCHES:
            out.append(f"[first {MAX_SEARCH_MATCHES} of {len(matches)} shown; narrow the search]")
        for path in unreadable:
            self._unavailable(path)
        if unreadable:
            shown_paths = ", ".join(unreadable[:MAX_UNREADABLE_SHOWN])
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
        except ToolRefused:
            return False
        if entry is None or entry.kind != "file" or line < 1 or not entry.available:
            return False
        try:
            data = self.tree.blob(entry.object_id)
        except ObjectMissing:
            return False
        return line <= data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)

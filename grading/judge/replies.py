"""What a judge's reply may say (§4): the diff-location index a verdict's locations must be in, the check
that accepts a reply only when it covers every item id exactly once with a reason and such locations, and
the consistency rule between a verdict and the judge's own finding. The runner (:mod:`grading.judge.runner`)
asks again on a rejected reply."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from grading.diffs import read_diff
from grading.judge.backend import BackendReply
from grading.judge.models import FINDING_VERDICT, Finding, ItemKind, ItemVerdict, Location, VerdictValue
from grading.judge.tree_tools import TreeTools

# stop reasons that mean the reply was cut off (Anthropic, OpenAI)
TRUNCATED_STOP_REASONS = {"max_tokens", "length", "model_context_window_exceeded"}
REFUSED_STOP_REASONS = {"refusal", "content_filter"}


# --- where a verdict may point: the diff-location index ----------------------------------------------------


def _strip_prefix(path: str) -> str:
    return path[2:] if path.startswith(("a/", "b/")) else path


class DiffIndex:
    """Line numbers each file shows in the diff: new side (added and context lines), old side (removed and
    context lines). Its paths are the ones ``grading.diffs`` gives scope and integrity."""

    def __init__(self) -> None:
        self.new_lines: dict[str, set[int]] = {}
        self.old_lines: dict[str, set[int]] = {}

    def has(self, location: Location) -> bool:
        table = self.new_lines if location.side == "new" else self.old_lines
        # A judge may cite the path as the diff header spells it ("b/src/x.py") or with a leading slash.
        for path in (location.file, _strip_prefix(location.file), location.file.lstrip("/")):
            if location.line in table.get(path, ()):
                return True
        return False

    def files(self) -> list[str]:
        return sorted(set(self.new_lines) | set(self.old_lines))


class DiffAndTreeIndex(DiffIndex):
    """Where a tree-judged verdict may point: a line of the diff, or an old-side line of the base tree."""

    def __init__(self, diff: DiffIndex, tools: TreeTools) -> None:
        super().__init__()
        self.new_lines, self.old_lines = diff.new_lines, diff.old_lines
        self.tools = tools

    def has(self, location: Location) -> bool:
        if super().has(location):
            return True
        return location.side == "old" and self.tools.has_line(_strip_prefix(location.file), location.line)


def index_diff(diff_text: str) -> DiffIndex:
    """Build the :class:`DiffIndex` of a unified diff with :func:`grading.diffs.read_diff`, leniently: files
    after a part it cannot read are left out (no location in them is accepted)."""
    index = DiffIndex()
    parsed = read_diff(diff_text, strict=False)
    for diff_file in parsed.files:
        old_path, new_path = diff_file.change.old_path, diff_file.change.new_path
        for hunk in diff_file.hunks:
            old_set = index.old_lines.setdefault(old_path, set()) if old_path is not None else set()
            new_set = index.new_lines.setdefault(new_path, set()) if new_path is not None else set()
            for kind, old_no, new_no, _ in parsed.hunk_lines(hunk):
                if kind != "add" and old_no is not None:
                    old_set.add(old_no)
                if kind != "del" and new_no is not None:
                    new_set.add(new_no)
    return index


# --- replies ---------------------------------------------------------------------------------------------


class ReplyLocation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: str
    line: StrictInt
    side: Literal["new", "old"]


class ReplyVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    reason: Annotated[str, Field(min_length=1)]
    finding: Finding
    verdict: VerdictValue
    locations: list[ReplyLocation]

    def item_verdict(
        self, kind: ItemKind, model_id: str, *, flagged: bool, tree_judged: bool = False
    ) -> ItemVerdict:
        """This checked verdict as a result's verdict on the item of ``kind``, by ``model_id``."""
        return ItemVerdict(
            item_id=self.id,
            kind=kind,
            verdict=self.verdict,
            finding=self.finding,
            reason=self.reason,
            locations=[Location(file=loc.file, line=loc.line, side=loc.side) for loc in self.locations],
            flagged_inconsistent=flagged,
            model_id=model_id,
            tree_judged=tree_judged,
        )


class _Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdicts: list[ReplyVerdict]


class RejectedReply(Exception):
    """A reply that cannot be counted; the runner asks again, then records a judge failure."""


def check_reply(reply: BackendReply, item_ids: list[str], index: DiffIndex) -> list[ReplyVerdict]:
    """The reply's verdicts when it covers every id exactly once with valid locations; else RejectedReply."""
    if reply.refused or (reply.stop_reason or "") in REFUSED_STOP_REASONS:
        raise RejectedReply("refused")
    if (reply.stop_reason or "") in TRUNCATED_STOP_REASONS:
        raise RejectedReply(f"truncated (stop reason {reply.stop_reason})")
    if not reply.text or not reply.text.strip():
        raise RejectedReply("empty reply")
    try:
        parsed = _Reply.model_validate_json(reply.text.strip())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "reply"
        raise RejectedReply(f"malformed reply: {where}: {first['msg']}") from None
    seen: list[str] = [v.id for v in parsed.verdicts]
    duplicates = sorted({i for i in seen if seen.count(i) > 1})
    missing = [i for i in item_ids if i not in seen]
    extra = sorted({i for i in seen if i not in item_ids})
    problems = []
    if missing:
        problems.append("missing " + ", ".join(missing))
    if extra:
        problems.append("unknown " + ", ".join(extra))
    if duplicates:
        problems.append("more than one verdict for " + ", ".join(duplicates))
    if problems:
        raise RejectedReply("does not cover every id exactly once: " + "; ".join(problems))
    if any(not v.reason.strip() for v in parsed.verdicts):
        raise RejectedReply("a verdict has a blank reason")
    bad = [
        f"{v.id}: {loc.file}:{loc.line} ({loc.side})"
        for v in parsed.verdicts
        for loc in v.locations
        if not index.has(Location(file=loc.file, line=loc.line, side=loc.side))
    ]
    if bad:
        raise RejectedReply("cites locations that are not in the diff: " + "; ".join(bad[:5]))
    order = {item_id: n for n, item_id in enumerate(item_ids)}
    return sorted(parsed.verdicts, key=lambda v: order[v.id])


# --- consistency ---------------------------------------------------------------------------------------


def finding_disagrees(verdict: VerdictValue, finding: Finding) -> bool:
    """True when the verdict is not the one the judge's own finding on its reason implies (§4 consistency):
    "satisfied" goes with "pass", "violated" with "fail". The judge states the finding right after the
    reason and before the verdict, so a reason that argues the other way shows up here, in the judge's own
    words, instead of through a keyword guess at the reason's polarity."""
    return FINDING_VERDICT[finding] != verdict

"""Checks a draft must go through before it is stored (spec §6). A problem is listed, never fixed silently:
the maintainer edits the draft from there.

- the rubric validates against repo_rubric.v1 and the authoring rules (``grading.schema``);
- each ``path:line`` (or ``path:a-b``) a blocker cites as evidence exists at the base commit;
- the lazy diff, and the alt diff when there is one, apply to the base (``git apply --check``).
"""

from __future__ import annotations

import re

from grading.basetree import BaseTree
from grading.draft.drafter import ALT_DIFF_PATH, LAZY_DIFF_PATH, Draft
from grading.errors import InputError, InputErrors
from grading.schema import parse_rubric

# path:line or path:first-last; a path has a dot or a slash so "note: 3" is no citation. Bounded repeats
# keep the scan linear on any text.
_CITATION = re.compile(r"(?<![\w/.-])([\w][\w./-]{0,300}[./][\w./-]{0,300}):(\d{1,9})(?:-(\d{1,9}))?")


def evidence_citations(evidence: str) -> list[tuple[str, int, int]]:
    """(path, first line, last line) of every ``path:line`` citation in an evidence text."""
    out = []
    for match in _CITATION.finditer(evidence):
        if match.group(1).startswith(("http", "www.")):
            continue
        first = int(match.group(2))
        last = int(match.group(3)) if match.group(3) else first
        out.append((match.group(1), first, last))
    return out


def check_draft(draft: Draft, tree: BaseTree) -> list[str]:
    """Every problem of ``draft`` against the base tree, each naming where it is."""
    problems: list[str] = []
    try:
        parse_rubric(draft.rubric)
    except InputErrors as exc:
        problems += [f"rubric.json: {field}: {message}" for field, message in exc.errors]
    except InputError as exc:
        problems.append(f"rubric.json: {exc.message}")
    blockers = draft.rubric.get("blockers")
    for i, blocker in enumerate(blockers if isinstance(blockers, list) else []):
        evidence = blocker.get("evidence") if isinstance(blocker, dict) else None
        if not isinstance(evidence, str):
            continue
        for path, first, last in evidence_citations(evidence):
            count = tree.line_count(path)
            if count is None:
                problems.append(
                    f"rubric.json: blockers[{i}].evidence: {path} does not exist at the base commit"
                )
            elif first < 1 or last < first or last > count:
                problems.append(
                    f"rubric.json: blockers[{i}].evidence: {path}:{first}"
                    f"{'-' + str(last) if last != first else ''} is past the end of the file "
                    f"({count} lines at the base commit)"
                )
    for name, text in ((LAZY_DIFF_PATH, draft.lazy_diff), (ALT_DIFF_PATH, draft.alt_diff)):
        if text is None:
            continue
        problem = tree.apply_problem(text)
        if problem:
            problems.append(f"{name}: does not apply to the base commit: {problem}")
    return problems

"""Checks a draft must go through before it is stored (spec §6). A problem is listed, never fixed silently:
the maintainer edits the draft from there.

- the rubric validates against repo_rubric.v1 and the authoring rules (``grading.schema``);
- each ``path:line`` (or ``path:a-b``) a blocker cites as evidence exists at the base commit (citations as
  ``grading.citations`` reads them);
- the lazy diff, and the alt diff when there is one, apply to the base (``git apply --check``).
"""

from __future__ import annotations

from grading.basetree import BaseTree
from grading.citations import parse_citations
from grading.draft.drafter import ALT_DIFF_PATH, LAZY_DIFF_PATH, Draft
from grading.errors import InputError, InputErrors
from grading.loaders import parse_rubric


def evidence_citations(evidence: str) -> list[tuple[str, int, int]]:
    """(path, first line, last line) of every citation in an evidence text (:func:`parse_citations`)."""
    return [(c.path, c.start, c.end) for c in parse_citations(evidence)]


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
        for cite in parse_citations(evidence):
            path, first, last = cite.path, cite.start, cite.end
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

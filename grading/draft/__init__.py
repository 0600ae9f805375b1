"""Drafting rubrics from the merged PR and its review threads (spec §6).

Public names: :class:`PullRequest`, :func:`load_pr_export`, :func:`parse_pr_export`,
:class:`GitHubSource` (sources); :func:`build_draft_input`, :class:`DraftInput` (what the drafter may
read); :func:`draft_rubric`, :func:`make_drafter`, :func:`render_draft_request`, :class:`Draft`,
:class:`DraftError` (the call);
:func:`check_draft` (the checks before a draft is stored); :func:`write_draft` (files on disk).
"""

from grading.draft.checks import check_draft, evidence_citations
from grading.draft.drafter import (
    ALT_DIFF_PATH,
    LAZY_DIFF_PATH,
    Draft,
    DraftError,
    draft_output_schema,
    draft_rubric,
    make_drafter,
    render_draft_request,
)
from grading.draft.inputs import DEFAULT_GUIDANCE_GLOBS, DraftInput, SourceFile, build_draft_input
from grading.draft.pr import (
    GitHubError,
    GitHubSource,
    PullRequest,
    load_pr_export,
    parse_pr_export,
    pull_request_from_parts,
)

__all__ = [
    "ALT_DIFF_PATH",
    "DEFAULT_GUIDANCE_GLOBS",
    "LAZY_DIFF_PATH",
    "Draft",
    "DraftError",
    "DraftInput",
    "GitHubError",
    "GitHubSource",
    "PullRequest",
    "SourceFile",
    "build_draft_input",
    "check_draft",
    "draft_output_schema",
    "draft_rubric",
    "evidence_citations",
    "load_pr_export",
    "parse_pr_export",
    "make_drafter",
    "pull_request_from_parts",
    "render_draft_request",
]

"""``rubric draft``: draft a rubric from the merged PR and its review threads (spec §6)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from grading.cli.common import Subparsers, add_json_flag, print_json
from grading.errors import InputError


def register(subparsers: Subparsers) -> None:
    draft = subparsers.add_parser(
        "draft",
        help="draft a rubric from the merged PR and its review threads",
        description="Draft TASK_DIR's rubric with an LLM in the maintainer's role, from the task prompt, the "
        "merged PR (a GitHub pull, or an export file of the same shape), the repository's guidance files "
        "and the base source of the files the PR touches, all read at the task's base commit. Agent runs "
        "are never read. The draft is checked (schema, path:line evidence at the base, lazy and alt diffs "
        "apply) and written with its problems listed, never fixed silently: OUT/rubric.json, "
        "OUT/calib/lazy.diff, OUT/calib/alt.diff, OUT/draft.json. Exit 0 a clean draft, 1 a draft with "
        "problems or a failed drafting call, 2 bad input. GitHub reads GITHUB_TOKEN.",
    )
    draft.add_argument("task_dir", type=Path, metavar="TASK_DIR", help="the task directory (task.json)")
    draft.add_argument(
        "--checkout",
        type=Path,
        required=True,
        metavar="REPO",
        help="a clone of the repository holding the task's base commit",
    )
    source = draft.add_mutually_exclusive_group(required=True)
    source.add_argument("--pr-export", type=Path, metavar="FILE", help="the PR as an export JSON file")
    source.add_argument("--github", metavar="OWNER/NAME", help="fetch the PR from GitHub's REST API")
    draft.add_argument("--pr", type=int, metavar="NUMBER", help="the PR number (with --github)")
    draft.add_argument(
        "--github-api",
        default="https://api.github.com",
        metavar="URL",
        help="GitHub API root (default: %(default)s)",
    )
    draft.add_argument(
        "--drafter",
        required=True,
        metavar="SPEC",
        help="anthropic:<full-model-id>, or scripted:FILE (replies with the draft in FILE: demos, tests)",
    )
    draft.add_argument(
        "--guidance",
        action="append",
        metavar="GLOB",
        help="guidance files to read (repeatable; default: CONTRIBUTING.md, AGENTS.md, "
        "CLAUDE.md, docs/dev/**)",
    )
    draft.add_argument("--out", type=Path, required=True, metavar="DIR", help="where the draft is written")
    draft.add_argument(
        "--prices",
        type=Path,
        metavar="FILE",
        help="price table JSON (default: built-in, or $RUBRIC_JUDGE_PRICES)",
    )
    add_json_flag(draft)
    draft.set_defaults(handler=run_draft)


def run_draft(args: argparse.Namespace) -> int:
    # Imported here: the SDKs load only for commands that call a model.
    from grading.basetree import BaseTree
    from grading.draft.checks import check_draft
    from grading.draft.drafter import DraftError, draft_rubric, make_drafter
    from grading.draft.files import write_draft
    from grading.draft.inputs import DEFAULT_GUIDANCE_GLOBS, build_draft_input
    from grading.draft.pr import GitHubError, GitHubSource, load_pr_export
    from grading.judge.cost import load_price_table
    from grading.loaders import load_task

    task = load_task(args.task_dir)
    if not task.base_commit:
        raise InputError(args.task_dir / "task.json", "required to read the base source", "base_commit")
    backend = make_drafter(args.drafter)
    prices = load_price_table(args.prices)
    tree = BaseTree(args.checkout, task.base_commit)
    notes: list[str] = []
    if args.pr_export is not None:
        pr = load_pr_export(args.pr_export)
    else:
        if args.pr is None:
            raise InputError(None, "--github needs --pr NUMBER", "--pr")
        # Checked before anything is sent: OWNER/NAME, the API root, the PR number (exit 2 when wrong).
        source = GitHubSource(args.github, os.environ.get("GITHUB_TOKEN"), base_url=args.github_api)
        try:
            pr = source.fetch(args.pr)
        except GitHubError as exc:
            print(f"rubric: fetching the PR: {exc}")
            return 1
        finally:
            source.close()
        notes = source.notes()
    draft_input = build_draft_input(
        task_id=task.id,
        task_prompt=task.prompt or "",
        pr=pr,
        tree=tree,
        guidance_globs=args.guidance or DEFAULT_GUIDANCE_GLOBS,
    )
    try:
        draft = draft_rubric(draft_input, backend, prices=prices)
    except DraftError as exc:
        print(f"rubric: {exc}")
        return 1
    draft = draft.model_copy(update={"problems": check_draft(draft, tree), "notes": notes})
    write_draft(draft, args.out)
    if args.json:
        print_json(draft)
    else:
        label = " (scripted drafter: a stand-in, not a model)" if draft.scripted else ""
        print(
            f"drafted by {draft.model_id}{label} (input sha256 {draft.input_sha256[:12]}, "
            f"${draft.usage.cost_usd:.4f}) into {args.out}"
        )
        for note in draft.notes:
            print(f"  note: {note}")
        for item in draft.left_out:
            print(f"  left out of the drafting input for size: {item}")
        for problem in draft.problems:
            print(f"  problem: {problem!r}")
        if not draft.problems:
            print("  no problems found: review it blocker by blocker before approving")
    return 1 if draft.problems else 0

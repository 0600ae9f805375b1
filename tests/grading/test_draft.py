"""Drafting a rubric from a merged PR (spec §6): sources, input, the call, the checks, the command."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from grading.basetree import BaseTree
from grading.cli.rubric import main
from grading.draft import (
    DraftError,
    GitHubError,
    GitHubSource,
    build_draft_input,
    check_draft,
    draft_rubric,
    load_pr_export,
    make_drafter,
    pull_request_from_parts,
)
from grading.draft.drafter import fence_close, fence_open, render_pr, render_static
from grading.errors import InputError
from grading.judge.prompt import NONCE_PLACEHOLDER
from tests.gitrepo import GitRepo
from tests.grading.draft_helpers import FIX, INJECTION, LAZY, MODEL, POLYGON, good_reply, pr_parts
from tests.grading.github_server import FakeGitHub, github_fixture  # noqa: F401
from tests.grading.judge.fake_servers import FakeProviderServer, fake_server_fixture, malformed, text  # noqa: F401


@pytest.fixture
def repo(tmp_path: Path) -> tuple[GitRepo, str]:
    repo = GitRepo(tmp_path / "repo")
    repo.write("shapes/polygon.py", POLYGON)
    repo.write("CONTRIBUTING.md", "Every public area function must stay signed-compatible.\n")
    repo.write("docs/dev/style.md", "Keep functions small.\n")
    repo.write("tests/test_polygon.py", "def test_area():\n    pass\n")
    base = repo.commit("base")
    # The work tree moves on after the base: the drafter must read the base commit, not this.
    repo.write("shapes/polygon.py", "WORK TREE TEXT, NOT THE BASE\n")
    repo.write("CONTRIBUTING.md", "changed later\n")
    repo.commit("later")
    return repo, base


def drafter(server: FakeProviderServer) -> Any:
    return make_drafter(
        f"anthropic:{MODEL}", base_url=server.anthropic_base_url, api_key="test-key-123456", max_retries=0
    )


def the_input(repo: tuple[GitRepo, str], **kw: Any) -> Any:
    git, base = repo
    pr = pull_request_from_parts(**pr_parts())
    return build_draft_input(
        task_id="fix_area",
        task_prompt="polygon_area is negative for clockwise input",
        pr=pr,
        tree=BaseTree(git.path, base),
        **kw,
    )


# --- sources ---


def test_github_source_follows_every_page_and_waits_out_the_rate_limit(github: FakeGitHub) -> None:
    parts = pr_parts()
    comments = [{"path": "shapes/polygon.py", "line": i, "body": f"comment {i}"} for i in range(1, 6)]
    github.add_pull(7, parts["pull"], parts["files"], comments, parts["reviews"], parts["issue_comments"])
    github.rate_limited["/repos/octo/shapes/pulls/7/comments"] = 1
    slept: list[float] = []
    source = GitHubSource("octo/shapes", "ghp_secret", base_url=github.url, sleep=slept.append)

    pr = source.fetch(7)

    assert [c.body for c in pr.review_comments] == [f"comment {i}" for i in range(1, 6)]  # 3 pages of 2
    assert len(slept) == 1 and 0 < slept[0] <= github.rate_limit_reset_in + 1
    comment_pages = [p for p, _ in github.requests if p.startswith("/repos/octo/shapes/pulls/7/comments")]
    assert len(comment_pages) == 4  # the rate-limited try, then pages 1, 2, 3
    assert all(h.get("authorization") == "Bearer ghp_secret" for _, h in github.requests)
    assert pr.reviews[0].body == ""  # GitHub's null body
    assert "+    return abs(signed_area(points))" in pr.diff


def test_github_retry_after_is_honoured(github: FakeGitHub) -> None:
    parts = pr_parts()
    github.add_pull(7, parts["pull"], parts["files"], [], [], [])
    github.rate_limited["/repos/octo/shapes/pulls/7"] = 1
    github.retry_after = "2"
    slept: list[float] = []
    GitHubSource("octo/shapes", None, base_url=github.url, sleep=slept.append).fetch(7)
    assert slept == [2.0]


def test_github_rate_limit_beyond_the_wait_limit_says_how_long_it_waited_and_when_it_resets(
    github: FakeGitHub,
) -> None:
    parts = pr_parts()
    github.add_pull(7, parts["pull"], parts["files"], [], [], [])
    github.rate_limited["/repos/octo/shapes/pulls/7"] = 5
    github.rate_limit_reset_in = 20
    source = GitHubSource("octo/shapes", None, base_url=github.url, max_wait=30, sleep=lambda s: None)
    with pytest.raises(GitHubError) as info:
        source.fetch(7)
    message = str(info.value)
    # One wait of about 21 s was taken; the second would pass the 30 s bound.
    assert re.search(r"waited 2[01]s in all, and this fetch waits at most 30s", message), message
    assert re.search(r"the limit resets at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(in 2[01]s\)", message)
    assert "more than the" not in message


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_github_follows_a_moved_repository_within_the_api_and_says_where(
    github: FakeGitHub, status: int
) -> None:
    parts = pr_parts()
    pull = parts["pull"] | {"base": {"sha": "x", "repo": {"full_name": "octo/shapes"}}}
    github.add_pull(7, pull, parts["files"], parts["review_comments"], [], [])
    github.redirects["/repos/octo/old-shapes/"] = (status, "/repos/octo/shapes/")
    source = GitHubSource("octo/old-shapes", "ghp_secret", base_url=github.url)

    pr = source.fetch(7)

    assert pr.number == 7 and pr.review_comments[0].path == "shapes/polygon.py"
    assert source.moved_to == "octo/shapes"
    assert "the repository moved to octo/shapes" in source.notes()[0]
    assert all(h.get("authorization") == "Bearer ghp_secret" for _, h in github.requests)


def test_github_redirects_are_bounded(github: FakeGitHub) -> None:
    github.redirects["/repos/octo/loop/"] = (302, "/repos/octo/loop/")
    with pytest.raises(GitHubError, match="more than 5 redirects"):
        GitHubSource("octo/loop", None, base_url=github.url).fetch(7)
    assert len(github.requests) == 6


@pytest.mark.parametrize("via", ["link", "redirect"])
def test_github_token_is_never_sent_to_another_origin(github: FakeGitHub, via: str) -> None:
    # The second server serves the same PR, so following it would have worked: the refusal is the client's.
    other = FakeGitHub().start()
    try:
        parts = pr_parts()
        comments = [{"path": "shapes/polygon.py", "line": i, "body": f"c{i}"} for i in range(1, 6)]
        for server in (github, other):
            server.add_pull(7, parts["pull"], parts["files"], comments, [], [])
        if via == "link":
            github.link_base = other.url  # the second page of review comments points at the other port
        else:
            github.redirects["/repos/octo/shapes/pulls/7/files"] = (
                307,
                f"{other.url}/repos/octo/shapes/pulls/7/files",
            )
        source = GitHubSource("octo/shapes", "ghp_secret", base_url=github.url)
        with pytest.raises(GitHubError) as info:
            source.fetch(7)
        assert f"points to {other.url}, not the configured API {github.url}: refused" in str(info.value)
        assert other.requests == []  # never asked, so never saw the Authorization header
        assert github.requests and all(
            h.get("authorization") == "Bearer ghp_secret" for _, h in github.requests
        )
    finally:
        other.stop()


def test_github_fetch_is_bounded_in_pages(github: FakeGitHub) -> None:
    parts = pr_parts()
    github.add_pull(7, parts["pull"], parts["files"], parts["review_comments"], [], [])
    github.endless.add("/repos/octo/shapes/pulls/7/comments")
    with pytest.raises(GitHubError, match="review comments run past 4 pages of 100"):
        GitHubSource("octo/shapes", None, base_url=github.url, max_pages=4).fetch(7)
    assert len([p for p, _ in github.requests if "/comments" in p]) == 4


def test_github_fetch_is_bounded_in_bytes(github: FakeGitHub) -> None:
    parts = pr_parts()
    comments = [{"path": "shapes/polygon.py", "line": 1, "body": "x" * 2000} for _ in range(10)]
    github.add_pull(7, parts["pull"], parts["files"], comments, [], [])
    source = GitHubSource("octo/shapes", None, base_url=github.url, max_bytes=6000)
    with pytest.raises(GitHubError, match="past 6000 bytes"):
        source.fetch(7)
    assert source.bytes_read <= 6000 + 4100  # stopped within the page that crossed the bound


def test_github_fetch_is_bounded_in_wall_time(github: FakeGitHub) -> None:
    parts = pr_parts()
    github.add_pull(7, parts["pull"], parts["files"], parts["review_comments"], [], [])
    github.endless.add("/repos/octo/shapes/pulls/7/comments")
    github.delay = 0.1
    started = time.monotonic()
    with pytest.raises(GitHubError, match="took longer than 1s"):
        GitHubSource("octo/shapes", None, base_url=github.url, max_seconds=1.0).fetch(7)
    assert time.monotonic() - started < 3


@pytest.mark.parametrize(
    "repository", ["../..", "octo/..", "./.", "octo/.", "-octo/x", "octo", "o/x/y", "o/a b"]
)
def test_github_repository_must_be_owner_slash_name(repository: str) -> None:
    with pytest.raises(InputError, match="OWNER/NAME"):
        GitHubSource(repository, "ghp_secret")


def test_github_request_paths_are_built_from_the_validated_parts(github: FakeGitHub) -> None:
    parts = pr_parts()
    github.repository = "Octo-Cat/my.repo_1"
    github.add_pull(7, parts["pull"], parts["files"], [], [], [])
    GitHubSource("Octo-Cat/my.repo_1", None, base_url=github.url).fetch(7)
    assert {p.split("?")[0].split("/pulls/")[0].split("/issues/")[0] for p, _ in github.requests} == {
        "/repos/Octo-Cat/my.repo_1"
    }
    with pytest.raises(InputError, match="at least 1"):
        GitHubSource("Octo-Cat/my.repo_1", None, base_url=github.url).fetch(0)


@pytest.mark.parametrize("url", ["http://[::1", "ftp://example.com", "api.github.com", "http://h:port/"])
def test_github_api_that_is_not_a_url_is_a_clear_error(url: str) -> None:
    with pytest.raises(InputError) as info:
        GitHubSource("octo/shapes", None, base_url=url)
    assert info.value.field == "--github-api" and "not an http(s) URL" in info.value.message


def test_github_unknown_pull_is_a_clear_error(github: FakeGitHub) -> None:
    with pytest.raises(GitHubError, match="not found"):
        GitHubSource("octo/shapes", None, base_url=github.url).fetch(99)


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ("[]", None),
        ('{"files": []}', "pull"),
        ('{"pull": {"number": 1, "title": "t"}, "files": {}}', "files"),
        ('{"pull": {"number": "x", "title": "t"}}', "pull.number"),
        ('{"pull": {"number": 0, "title": "t"}}', "pull.number"),
        ('{"pull": {"number": -3, "title": "t"}}', "pull.number"),
        ('{"pull": {"number": true, "title": "t"}}', "pull.number"),
        ('{"pull": {"number": "7", "title": "t"}}', "pull.number"),
        ('{"pull": {"number": 1, "title": "t"}, "review_comments": [{"side": "UP"}]}', "side"),
        ('{"pull": {"number": 1, "title": "t"}, "comments": []}', "comments"),
        ('{"pull": {"number": 1, "title": "t"}, "pull": {}}', None),
    ],
)
def test_pr_export_bad_input_names_the_field(tmp_path: Path, content: str, field: str | None) -> None:
    path = tmp_path / "pr.json"
    path.write_text(content)
    with pytest.raises(InputError) as info:
        load_pr_export(path)
    assert info.value.file == str(path)
    if field:
        assert field in str(info.value)


# --- input ---


def test_input_reads_the_base_commit_and_guidance_never_the_work_tree(repo: tuple[GitRepo, str]) -> None:
    draft_input = the_input(repo)
    sources = {f.path: f.text for f in draft_input.base_sources}
    guidance = {f.path: f.text for f in draft_input.guidance}
    assert sources == {"shapes/polygon.py": POLYGON}
    assert guidance == {
        "CONTRIBUTING.md": "Every public area function must stay signed-compatible.\n",
        "docs/dev/style.md": "Keep functions small.\n",
    }
    assert draft_input.base_commit == repo[1]


def test_input_is_bounded(repo: tuple[GitRepo, str]) -> None:
    draft_input = the_input(repo, max_file_bytes=20, max_source_bytes=30)
    kept = draft_input.guidance + draft_input.base_sources
    assert sum(len(f.text) for f in kept) <= 30
    assert all(len(f.text) <= 20 for f in kept)
    assert draft_input.omitted  # what did not fit is named, not dropped silently
    assert all(o.endswith("(left out for size: the source budget was spent)") for o in draft_input.omitted)


def test_input_names_the_files_the_checkout_does_not_hold(tmp_path: Path) -> None:
    git = GitRepo(tmp_path / "pruned")
    git.write("shapes/polygon.py", POLYGON)
    git.write("CONTRIBUTING.md", "Be kind.\n")
    git.write("docs/dev/style.md", "Keep functions small.\n")
    git.write(os.fsdecode(b"docs/caf\xe9/CONTRIBUTING.md"), "A guidance file under a latin-1 name.\n")
    base = git.commit("base")
    for spec in (f"{base}:shapes/polygon.py", f"{base}:docs/dev"):  # a pruned store, or a partial clone
        object_id = git.git("rev-parse", spec).strip()
        (git.path / ".git" / "objects" / object_id[:2] / object_id[2:]).unlink()
    draft_input = the_input((git, base))

    assert draft_input.base_sources == []
    assert draft_input.omitted == [
        "docs/dev/ (object not available in this checkout: its guidance files cannot be listed)",
        "shapes/polygon.py (object not available in this checkout)",
    ]
    guidance = {f.path: f.text for f in draft_input.guidance}
    assert guidance['"docs/caf\\351/CONTRIBUTING.md"'] == "A guidance file under a latin-1 name.\n"
    assert "Left out: docs/dev/ (object not available" in render_static(draft_input)
    render_static(draft_input).encode("utf-8")  # text the SDK can send


# --- the call ---


def test_draft_call_fences_the_pr_thread_and_returns_a_clean_draft(
    fake_server: FakeProviderServer, repo: tuple[GitRepo, str]
) -> None:
    fake_server.script(text(json.dumps(good_reply())))
    draft_input = the_input(repo)
    draft = draft_rubric(draft_input, drafter(fake_server))

    body = fake_server.model_calls()[0].body
    user = body["messages"][0]["content"][0]["text"]
    system = "".join(block["text"] for block in body["system"])
    nonce = user.split("carry the nonce ", 1)[1].split(".", 1)[0]
    inside = user.split(fence_open(nonce) + "\n", 1)[1].rsplit("\n" + fence_close(nonce), 1)[0]
    # The injection attempt, and its forged closing line, sit inside the real fence, not in the instructions.
    assert INJECTION in inside and INJECTION not in system
    assert user.count(fence_close(nonce)) == 1
    assert "Please keep signed_area signed" in inside
    # Base source, line-numbered, in the static part; the schema asks for the rubric's own parts.
    assert "    1  def signed_area(points):" in system
    assert set(body["output_config"]["format"]["schema"]["properties"]) >= {"intent", "blockers", "lazy_diff"}

    assert draft.model_id == MODEL
    assert draft.input_sha256 == draft_input.sha256()
    assert draft.rubric["calibration"] == {
        "lazy": [{"path": "calib/lazy.diff", "breaks": ["B1"]}],
        "alt": ["calib/alt.diff"],
    }
    assert "max_files" not in draft.rubric["scope"]  # null means no limit
    assert check_draft(draft, BaseTree(repo[0].path, repo[1])) == []


THREAD_HUNK = (
    "@@ -8,4 +8,4 @@ def signed_area(points):\n \n \n"
    " def polygon_area(points):\n-    return signed_area(points)"
)
OTHER_HUNK = '@@ -1,3 +1,3 @@\n def signed_area(points):\n     """Positive for counter-clockwise vertices."""'


def threaded_parts() -> dict[str, Any]:
    parts = pr_parts()
    parts["review_comments"] = [
        {
            "id": 11,
            "path": "shapes/polygon.py",
            "start_line": 9,
            "line": 10,
            "side": "RIGHT",
            "diff_hunk": THREAD_HUNK,
            "body": "Why abs here and not in signed_area?",
            "user": {"login": "rev"},
        },
        {
            "id": 12,
            "path": "shapes/polygon.py",
            "line": 2,
            "side": "LEFT",
            "diff_hunk": OTHER_HUNK,
            "body": "The docstring should say orientation matters.",
            "user": {"login": "rev2"},
        },
        {
            "id": 13,
            "in_reply_to_id": 11,
            "path": "shapes/polygon.py",
            "line": 10,
            "body": "centroid divides by it",
            "user": {"login": "author"},
        },
        {
            "id": 14,
            "in_reply_to_id": 11,
            "path": "shapes/polygon.py",
            "line": 10,
            "body": "Makes sense.",
            "user": {"login": "rev"},
        },
    ]
    return parts


def test_review_comments_reach_the_drafter_with_their_hunk_lines_and_replies(
    fake_server: FakeProviderServer, repo: tuple[GitRepo, str]
) -> None:
    fake_server.script(text(json.dumps(good_reply())))
    git, base = repo
    pr = pull_request_from_parts(**threaded_parts())
    draft_input = build_draft_input(task_id="fix_area", task_prompt="p", pr=pr, tree=BaseTree(git.path, base))
    draft_rubric(draft_input, drafter(fake_server))
    user = fake_server.model_calls()[0].body["messages"][0]["content"][0]["text"]

    # Both hunks arrive, each under its own comment, with the line range and side.
    first = user.index("### rev on shapes/polygon.py:9-10 (new file)")
    second = user.index("### rev2 on shapes/polygon.py:2 (old file)")
    assert "    -    return signed_area(points)" in user[first:second]
    assert "    def signed_area(points):" in user[second:]
    # The replies sit under the comment they answer, in order, not as comments of their own.
    thread = user[first:second]
    assert thread.index("- rev: Why abs here") < thread.index("  - reply by author: centroid divides by it")
    assert thread.index("reply by author") < thread.index("  - reply by rev: Makes sense.")
    assert "### author" not in user


def test_a_review_hunk_is_bounded_to_its_last_lines() -> None:
    long_hunk = (
        "@@ -1,900 +1,900 @@\n" + "\n".join(f" line {i}" for i in range(900)) + "\n+the commented line"
    )
    pr = pull_request_from_parts(
        **pr_parts() | {"review_comments": [{"id": 1, "path": "a.py", "line": 900, "diff_hunk": long_hunk}]}
    )
    text_out = render_pr(pr)
    assert "+the commented line" in text_out and " line 899" in text_out
    assert " line 1\n" not in text_out and "@@ -1,900" not in text_out
    assert "Diff hunk (its last lines):" in text_out
    assert len(text_out) < 3_000 + 2_000


def test_the_pr_material_is_capped_keeping_what_matters_most(repo: tuple[GitRepo, str]) -> None:
    git, base = repo
    parts = threaded_parts()
    parts["issue_comments"] = [
        {"body": f"+1 from me {i} " + "x" * 200, "user": {"login": "fan"}} for i in range(500)
    ]
    pr = pull_request_from_parts(**parts)
    draft_input = build_draft_input(
        task_id="fix_area", task_prompt="p", pr=pr, tree=BaseTree(git.path, base), max_pr_chars=3_000
    )
    kept = draft_input.pr
    assert kept.body == pr.body and kept.diff == pr.diff
    assert [c.id for c in kept.review_comments] == [11, 12, 13, 14]  # the threads, whole
    assert 0 < len(kept.issue_comments) < 20
    assert draft_input.pr_left_out == [f"{500 - len(kept.issue_comments)} of 500 conversation comments"]
    rendered = render_pr(kept, draft_input.pr_left_out)
    assert "## Left out for size" in rendered and "of 500 conversation comments" in rendered

    # Tighter still: first comments of threads go before any reply, and the diff before all of them.
    tight = build_draft_input(
        task_id="fix_area", task_prompt="p", pr=pr, tree=BaseTree(git.path, base), max_pr_chars=900
    )
    assert tight.pr.diff == pr.diff
    assert [c.id for c in tight.pr.review_comments] in ([], [11], [11, 12], [11, 12, 13])
    assert any("review comments" in item for item in tight.pr_left_out)
    assert tight.pr_left_out[-1] == "500 of 500 conversation comments"


def test_a_diff_past_the_cap_is_cut_at_files_and_named(repo: tuple[GitRepo, str]) -> None:
    git, base = repo
    big = (
        "diff --git a/big.txt b/big.txt\n--- a/big.txt\n+++ b/big.txt\n@@ -1 +1 @@\n-a\n+" + "b" * 5000 + "\n"
    )
    pr = pull_request_from_parts(**pr_parts(), diff=FIX + big)
    draft_input = build_draft_input(
        task_id="fix_area", task_prompt="p", pr=pr, tree=BaseTree(git.path, base), max_pr_chars=2_000
    )
    assert draft_input.pr.diff == FIX
    assert draft_input.pr_left_out[0] == "the diff of 1 file: big.txt"


def test_a_bad_draft_is_kept_with_its_problems_listed(
    fake_server: FakeProviderServer, repo: tuple[GitRepo, str]
) -> None:
    reply = good_reply(
        blockers=[
            {
                "id": "B1",
                "criterion": "c",
                "rationale": "",
                "evidence": "shapes/polygon.py:99",
                "needs_tree": False,
            }
        ],
        lazy_diff={"diff": LAZY.replace("total = 0.0", "total = 1.0"), "breaks": ["B1"]},
    )
    reply["blockers"].append(
        {"id": "B2", "criterion": "c", "rationale": "", "evidence": "nowhere.py:1", "needs_tree": False}
    )
    reply["non_blockers"] = reply["non_blockers"][:2]
    fake_server.script(text(json.dumps(reply)))
    draft = draft_rubric(the_input(repo), drafter(fake_server))
    problems = check_draft(draft, BaseTree(repo[0].path, repo[1]))
    joined = "\n".join(problems)
    assert "non_blockers: a rubric has 3-6 non_blockers, found 2" in joined
    assert "blockers[0].evidence: shapes/polygon.py:99 is past the end of the file (10 lines" in joined
    assert "blockers[1].evidence: nowhere.py does not exist at the base commit" in joined
    assert "calib/lazy.diff: does not apply to the base commit" in joined
    assert "calib/alt.diff" not in joined  # the alt diff applies


def test_a_reply_that_is_not_a_draft_is_a_drafting_failure(
    fake_server: FakeProviderServer, repo: tuple[GitRepo, str]
) -> None:
    fake_server.script(malformed('{"intent": "x"'))
    with pytest.raises(DraftError, match="not the draft JSON object"):
        draft_rubric(the_input(repo), drafter(fake_server))


def test_the_drafter_is_named_by_a_full_anthropic_model_id() -> None:
    with pytest.raises(InputError, match="anthropic"):
        make_drafter("openai:gpt-4.1-2025-04-14")
    with pytest.raises(InputError):
        make_drafter("anthropic:sonnet")


# --- the command ---


def task_dir(tmp_path: Path, base: str) -> Path:
    task = tmp_path / "tasks" / "fix_area"
    task.mkdir(parents=True)
    (task / "task.json").write_text(
        json.dumps(
            {"id": "fix_area", "prompt": "fix the area", "base_commit": base, "gate": ["pass", "mergeable"]}
        )
    )
    return task


def test_rubric_draft_writes_a_valid_draft_from_an_export(
    fake_server: FakeProviderServer,
    repo: tuple[GitRepo, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_server.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-123456")
    export = tmp_path / "pr.json"
    export.write_text(json.dumps(pr_parts()))
    fake_server.script(text(json.dumps(good_reply())))
    out = tmp_path / "draft"
    code = main(
        [
            "draft",
            str(task_dir(tmp_path, repo[1])),
            "--checkout",
            str(repo[0].path),
            "--pr-export",
            str(export),
            "--drafter",
            f"anthropic:{MODEL}",
            "--out",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr()
    assert main(["validate", str(out / "rubric.json")]) == 0
    assert (out / "calib" / "lazy.diff").read_text() == LAZY
    record = json.loads((out / "draft.json").read_text())
    assert record["model_id"] == MODEL and record["problems"] == []
    assert not [p for p in out.iterdir() if p.name.startswith(".draft-")]


def test_rubric_draft_from_github_with_a_problem_exits_1(
    fake_server: FakeProviderServer,
    github: FakeGitHub,
    repo: tuple[GitRepo, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_server.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-123456")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_from_env")
    parts = pr_parts()
    github.add_pull(
        7, parts["pull"], parts["files"], parts["review_comments"], parts["reviews"], parts["issue_comments"]
    )
    fake_server.script(text(json.dumps(good_reply(lazy_diff={"diff": "not a diff\n", "breaks": ["B1"]}))))
    out = tmp_path / "draft"
    code = main(
        [
            "draft",
            str(task_dir(tmp_path, repo[1])),
            "--checkout",
            str(repo[0].path),
            "--github",
            "octo/shapes",
            "--pr",
            "7",
            "--github-api",
            github.url,
            "--drafter",
            f"anthropic:{MODEL}",
            "--out",
            str(out),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 1
    assert "calib/lazy.diff: does not apply" in printed
    assert (out / "rubric.json").is_file()  # kept as a draft with its problems, never silently fixed
    assert {h.get("authorization") for _, h in github.requests} == {"Bearer ghp_from_env"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pr-export", "missing.json"], "missing.json"),
        (["--github", "not a repo", "--pr", "1"], "OWNER/NAME"),
        (["--github", "octo/shapes"], "--pr"),
        (["--github", "octo/..", "--pr", "1"], "OWNER/NAME"),
        (
            ["--github", "octo/shapes", "--pr", "1", "--github-api", "http://[::1"],
            "--github-api: not an http(s) URL",
        ),
        (["--github", "octo/shapes", "--pr", "0"], "--pr: a PR number is a whole number of at least 1"),
    ],
)
def test_rubric_draft_bad_input_exits_2(
    repo: tuple[GitRepo, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    code = main(
        [
            "draft",
            str(task_dir(tmp_path, repo[1])),
            "--checkout",
            str(repo[0].path),
            *args,
            "--drafter",
            f"anthropic:{MODEL}",
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_rubric_draft_unknown_base_commit_exits_2(repo: tuple[GitRepo, str], tmp_path: Path) -> None:
    export = tmp_path / "pr.json"
    export.write_text(json.dumps(pr_parts()))
    code = main(
        [
            "draft",
            str(task_dir(tmp_path, "0" * 40)),
            "--checkout",
            str(repo[0].path),
            "--pr-export",
            str(export),
            "--drafter",
            f"anthropic:{MODEL}",
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert code == 2


def test_nonce_placeholder_is_not_a_usable_fence() -> None:
    # The placeholder the judge uses in cache keys must never be accepted as a nonce by the drafter's fence.
    assert NONCE_PLACEHOLDER not in fence_open("abc")

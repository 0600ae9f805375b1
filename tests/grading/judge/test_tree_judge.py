"""The tree judge (needs_tree blockers) end to end: runner -> real SDK -> the local provider server, which
scripts tool calls; the tools answer from a real git repository's base commit."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from grading.basetree import MAX_READ_BYTES, BaseTree
from grading.checks.outcome import grade_run
from grading.cli.rubric import main
from grading.judge.anthropic_backend import AnthropicBackend
from grading.judge.backend import Backend, ToolCall
from grading.judge.cache import MemoryCache
from grading.judge.models import JudgeResult, TreeBudget
from grading.judge.openai_backend import OpenAIBackend
from grading.judge.prompt import JudgeItem
from grading.judge.runner import JudgeSettings, judge_diff
from grading.judge.scripted import ScriptedBackend
from grading.judge.tree import tree_cache_key, tree_request
from grading.judge.tree_tools import TreeTools
from grading.schema import TaskSpec
from tests.gitrepo import GitRepo
from tests.grading.judge.fake_servers import (
    FakeProviderServer,
    fake_server_fixture,  # noqa: F401 - the fake_server fixture
    tool_use,
    valid,
)
from tests.grading.judge.judge_helpers import TASK, make_rubric, rubric_data

ANTHROPIC_MODEL = "claude-sonnet-4-5-20250929"
OPENAI_MODEL = "gpt-4.1-2025-04-14"

# The change under review: edits src/area.py and adds src/helpers.py (a file only the workspace has).
DIFF = """\
diff --git a/src/area.py b/src/area.py
index a13253b..edc952d 100644
--- a/src/area.py
+++ b/src/area.py
@@ -1,2 +1,2 @@
 def polygon_area(points):
-    return signed(points) / 2
+    return abs(signed(points)) / 2
diff --git a/src/helpers.py b/src/helpers.py
new file mode 100644
index 0000000..1111111
--- /dev/null
+++ b/src/helpers.py
@@ -0,0 +1 @@
+SECRET_WORKSPACE_ONLY = 1
"""


def make_base(git_repo: GitRepo, tmp_path: Path) -> tuple[str, str]:
    """A repository whose base commit has two backends, an escaping and an in-tree symlink and a
    submodule; a later commit changes a backend, and the work tree holds the agent's new file."""
    outside = tmp_path / "outside.txt"
    outside.write_text("OUTSIDE-SECRET\n")
    git_repo.write("src/area.py", "def polygon_area(points):\n    return signed(points) / 2\n")
    git_repo.write("src/backend_cpu.py", "def area(p):\n    return signed(p) / 2  # BASE-CPU\n")
    git_repo.write("src/backend_gpu.py", "def area(p):\n    return signed(p) / 2  # BASE-GPU\n")
    os.symlink("../../outside.txt", git_repo.path / "escape")
    os.symlink("src/backend_cpu.py", git_repo.path / "cpu_link")
    git_repo.git("add", "-A")
    git_repo.git("update-index", "--add", "--cacheinfo", f"160000,{'a' * 40},vendor/sub")
    git_repo.git("commit", "-q", "-m", "base")  # not commit(): `git add -A` would drop the gitlink
    base = git_repo.head()
    git_repo.write("src/backend_gpu.py", "def area(p):\n    return abs(signed(p)) / 2  # LATER\n")
    later = git_repo.commit("later")
    # The agent's workspace: the file its diff adds exists on disk, never in the base tree.
    git_repo.write("src/helpers.py", "SECRET_WORKSPACE_ONLY = 1\n")
    return base, later


def anthropic(server: FakeProviderServer) -> AnthropicBackend:
    return AnthropicBackend(
        ANTHROPIC_MODEL, base_url=server.anthropic_base_url, api_key="sk-test", max_retries=0, timeout=5.0
    )


def openai(server: FakeProviderServer) -> OpenAIBackend:
    return OpenAIBackend(
        OPENAI_MODEL, base_url=server.openai_base_url, api_key="sk-test", max_retries=0, timeout=5.0
    )


def task_at(commit: str) -> TaskSpec:
    return TASK.model_copy(update={"base_commit": commit})


def judge(
    backend: Backend,
    tree: BaseTree | None,
    *,
    cache: MemoryCache | None = None,
    budget: TreeBudget | None = None,
) -> JudgeResult:
    settings = JudgeSettings(tree_budget=budget or TreeBudget())
    task = task_at(tree.commit) if tree is not None else TASK
    return asyncio.run(
        judge_diff(
            task,
            make_rubric(needs_tree=True),
            DIFF,
            backend,
            config_edited=False,
            cache=cache,
            settings=settings,
            base_tree=tree,
        )
    )


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool answers an Anthropic request carries, in order."""
    return [
        block
        for m in body["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for block in m["content"]
        if block.get("type") == "tool_result"
    ]


PROBES = (
    ("list_directory", {"path": ""}),
    ("read_file", {"path": "src/backend_gpu.py", "start_line": 1, "end_line": None}),
    ("search_tree", {"pattern": "BASE-[A-Z]+", "path": "src", "fixed_string": None, "ignore_case": None}),
    ("read_file", {"path": "cpu_link", "start_line": None, "end_line": None}),
    ("read_file", {"path": "../outside.txt", "start_line": None, "end_line": None}),
    ("read_file", {"path": str(Path("/etc/passwd")), "start_line": None, "end_line": None}),
    ("read_file", {"path": "escape", "start_line": None, "end_line": None}),
    ("read_file", {"path": "src/helpers.py", "start_line": None, "end_line": None}),
    ("list_directory", {"path": "vendor/sub"}),
    ("delete_file", {"path": "src/area.py"}),
)


def test_the_tree_judge_reads_the_base_commit_and_refuses_everything_else(
    fake_server: FakeProviderServer, git_repo: GitRepo, tmp_path: Path
) -> None:
    base, _ = make_base(git_repo, tmp_path)
    # The diff-only call, then the tree judge's conversation for B2: one turn of tool calls, then a verdict.
    fake_server.script(valid(), tool_use(*PROBES), valid("fail"))
    result = judge(anthropic(fake_server), BaseTree(git_repo.path, base))

    assert result.failure is None, result.failure
    b2 = result.verdict("B2")
    assert b2 is not None and b2.tree_judged and b2.verdict == "fail"
    assert result.not_measured == [] and result.tree_base_commit == base
    assert [v.item_id for v in result.verdicts] == ["B1", "B2", "N1", "N2", "N3"]
    assert not result.verdict("B1").tree_judged  # type: ignore[union-attr]

    calls = fake_server.model_calls()
    assert len(calls) == 3
    diff_only, first_turn, second_turn = (c.body for c in calls)
    assert "tools" not in diff_only and "B2" not in json.dumps(diff_only["output_config"])
    assert [t["name"] for t in first_turn["tools"]] == ["list_directory", "read_file", "search_tree"]
    assert base in first_turn["system"][0]["text"]  # the instructions name the base commit
    answers = tool_results(second_turn)
    assert len(answers) == len(PROBES)
    for answer in answers:
        assert answer["content"].startswith("<<<BASE-TREE BEGIN ")  # fenced like the diff
    text = [a["content"] for a in answers]
    errors = [a["is_error"] for a in answers]
    assert errors == [False, False, False, False, True, True, True, True, True, True]
    assert "src/" in text[0] and "escape -> ../../outside.txt (symlink)" in text[0]
    assert "BASE-GPU" in text[1] and "LATER" not in text[1]  # the base commit, not HEAD
    assert "src/backend_cpu.py:2:" in text[2] and "src/backend_gpu.py:2:" in text[2]
    assert "BASE-CPU" in text[3]  # a symlink inside the tree is followed
    assert "'..'" in text[4] and "cannot leave" in text[4]
    assert "absolute" in text[5]
    assert "outside the repository" in text[6]
    assert "the change under review adds it" in text[7] and "never the workspace" in text[7]
    assert "submodule" in text[8]
    assert "no tool named 'delete_file'" in text[9]
    assert not any("OUTSIDE-SECRET" in t or "SECRET_WORKSPACE_ONLY = 1" in t for t in text)
    assert not any("root:" in t for t in text)

    # The transcript is kept with the verdict's result, for audit; the cost is counted apart.
    (record,) = result.tree
    assert record.item_id == "B2" and record.tool_calls == len(PROBES) and record.calls == 2
    assert [u.tool for u in record.transcript] == [name for name, _ in PROBES]
    assert [u.ok for u in record.transcript] == [not e for e in errors]
    assert record.transcript[1].answer == text[1]
    assert result.calls == 1 and result.usage.cost_usd > 0
    assert result.tree_usage.cost_usd > 0 and result.tree_usage.input_tokens > 0
    assert result.tree_usage == record.usage


def test_the_openai_backend_holds_the_same_tool_conversation(
    fake_server: FakeProviderServer, git_repo: GitRepo, tmp_path: Path
) -> None:
    base, _ = make_base(git_repo, tmp_path)
    fake_server.script(
        valid(),
        tool_use(PROBES[1], PROBES[4]),
        tool_use(("read_file", "not json")),
        valid(),
    )
    result = judge(openai(fake_server), BaseTree(git_repo.path, base))

    assert result.failure is None, result.failure
    assert result.verdict("B2").tree_judged  # type: ignore[union-attr]
    last = fake_server.model_calls()[-1].body
    tool_messages = [m for m in last["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 3
    assert "BASE-GPU" in tool_messages[0]["content"]
    assert "tool error" in tool_messages[1]["content"] and "'..'" in tool_messages[1]["content"]
    assert "not a JSON object" in tool_messages[2]["content"]
    assert [u.ok for u in result.tree[0].transcript] == [True, False, False]


def test_an_exhausted_tool_call_budget_is_a_judge_failure_for_that_item(
    fake_server: FakeProviderServer, git_repo: GitRepo, tmp_path: Path
) -> None:
    base, _ = make_base(git_repo, tmp_path)
    fake_server.script(valid(), tool_use(PROBES[0]), tool_use(PROBES[1], PROBES[2]))
    result = judge(anthropic(fake_server), BaseTree(git_repo.path, base), budget=TreeBudget(max_tool_calls=2))

    assert result.failure is not None and result.failure.startswith("tree judge: B2: tool-call budget")
    assert "1 tool calls made, 2 more asked for, the budget is 2" in result.failure
    assert result.verdicts == []  # a judge failure: never a pass, never a fail
    (record,) = result.tree
    assert record.failure is not None and "budget" in record.failure
    assert [u.tool for u in record.transcript] == ["list_directory"]  # the calls over budget never ran
    assert len(fake_server.model_calls()) == 3


def test_an_exhausted_token_budget_is_a_judge_failure(
    fake_server: FakeProviderServer, git_repo: GitRepo, tmp_path: Path
) -> None:
    base, _ = make_base(git_repo, tmp_path)
    fake_server.script(valid(), tool_use(PROBES[0]))
    result = judge(anthropic(fake_server), BaseTree(git_repo.path, base), budget=TreeBudget(max_tokens=50))

    assert result.failure is not None and "B2: token budget exhausted" in result.failure
    assert result.tree[0].transcript == []  # stopped before answering the call


def test_the_cache_key_adds_the_base_commit_and_the_transcript_is_cached(
    fake_server: FakeProviderServer, git_repo: GitRepo, tmp_path: Path
) -> None:
    base, later = make_base(git_repo, tmp_path)
    backend = anthropic(fake_server)
    rubric = make_rubric(needs_tree=True)
    item = JudgeItem(id="B2", kind="blocker", criterion=rubric.blockers[1].criterion)
    budget = TreeBudget()
    key_base = tree_cache_key(backend, tree_request(task_at(base), rubric, item, DIFF, base, budget,
                                                    max_diff_chars=10**6), base)  # fmt: skip
    key_later = tree_cache_key(backend, tree_request(task_at(later), rubric, item, DIFF, later, budget,
                                                     max_diff_chars=10**6), later)  # fmt: skip
    assert key_base != key_later

    cache = MemoryCache()
    fake_server.script(valid(), tool_use(PROBES[1]), valid("fail"))
    first = judge(backend, BaseTree(git_repo.path, base), cache=cache)
    assert first.failure is None and len(fake_server.model_calls()) == 3
    stored = cache.get(key_base)
    assert stored is not None and stored.tree[0].transcript[0].tool == "read_file"

    again = judge(backend, BaseTree(git_repo.path, base), cache=cache)
    assert len(fake_server.model_calls()) == 3  # both the diff-only and the tree verdicts were cached
    assert again.tree[0].cache_hit and again.tree[0].transcript == first.tree[0].transcript
    assert again.tree_usage.cost_usd == 0 and again.verdict("B2") == first.verdict("B2")

    fake_server.script(valid("pass"))
    moved = judge(backend, BaseTree(git_repo.path, later), cache=cache)
    # The diff-only items do not depend on the base commit; the tree-judged one is judged again.
    assert len(fake_server.model_calls()) == 4
    assert not moved.tree[0].cache_hit and moved.verdict("B2").verdict == "pass"  # type: ignore[union-attr]


def test_without_a_checkout_or_tool_use_needs_tree_blockers_stay_not_measured(
    fake_server: FakeProviderServer, git_repo: GitRepo, tmp_path: Path
) -> None:
    base, _ = make_base(git_repo, tmp_path)
    result = judge(anthropic(fake_server), None)
    assert result.not_measured == ["B2"] and "--checkout" in (result.not_measured_reason or "")
    assert result.tree == [] and len(fake_server.model_calls()) == 1

    script = tmp_path / "script.json"
    script.write_text(json.dumps({"default": {i: {"verdict": "pass", "reason": "ok"}
                                              for i in ("B1", "N1", "N2", "N3")}}))  # fmt: skip
    scripted = judge(ScriptedBackend(script), BaseTree(git_repo.path, base))
    assert scripted.failure is None and scripted.not_measured == ["B2"]
    assert "scripted judge has no tree tools" in (scripted.not_measured_reason or "")


# --- the tools alone ----------------------------------------------------------------------------------------


def test_tool_answers_are_capped_and_paths_checked(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.write("big.txt", "".join(f"line {n} {'x' * 50}\n" for n in range(1, 2001)))
    git_repo.write("bin.dat", b"\0\1\2binary")
    git_repo.write("a/b/c.txt", "deep\n")
    os.symlink("../a", git_repo.path / "a" / "up")  # a/up -> a (inside)
    os.symlink("../../..", git_repo.path / "a" / "b" / "far")  # leaves the repository
    base = git_repo.commit("base")
    tools = TreeTools(BaseTree(git_repo.path, base), ["new/file.py"], max_answer_chars=2000)

    def ask(name: str, **arguments: Any) -> tuple[str, bool]:
        return tools.answer(ToolCall(id="t", name=name, arguments=arguments))

    text, error = ask("read_file", path="big.txt")
    assert not error and len(text) <= 2000 and "read on from" in text and "line 1 " in text
    text, error = ask("read_file", path="big.txt", start_line=1990, end_line=5000)
    assert not error and "lines 1990-2000 of 2000" in text
    assert ask("read_file", path="big.txt", start_line=3000)[1]
    assert "binary file" in ask("read_file", path="bin.dat")[0]
    assert "deep" in ask("read_file", path="./a//up/b/c.txt")[0]  # in-tree symlink, path normalised
    assert "outside the repository" in ask("list_directory", path="a/b/far")[0]
    assert "'..'" in ask("list_directory", path="a/../..")[0]
    assert "adds it" in ask("list_directory", path="new")[0]
    assert "no such file" in ask("read_file", path="nope.py")[0]
    assert "is a directory" in ask("read_file", path="a")[0]
    assert "bad arguments" in ask("read_file", path=3)[0]
    text, error = ask("search_tree", pattern="line 1[0-9]{3} ", path="", fixed_string=False)
    assert not error and "1000 matches" in text and "ask for less" in text and len(text) <= 2000
    assert "git grep" in ask("search_tree", pattern="(unclosed")[0]
    assert tools.has_line("big.txt", 2000) and not tools.has_line("big.txt", 2001)


# --- the commands -----------------------------------------------------------------------------------------


def write_task(tmp_path: Path, base: str | None) -> tuple[Path, Path, Path]:
    task_dir = tmp_path / "task"
    task_dir.mkdir()
    task: dict[str, Any] = {"id": TASK.id, "prompt": TASK.prompt, "gate": ["pass"]}
    if base is not None:
        task["base_commit"] = base
    (task_dir / "task.json").write_text(json.dumps(task))
    (task_dir / "rubric.json").write_text(json.dumps(rubric_data(needs_tree=True)))
    run = tmp_path / "run"
    run.mkdir()
    (run / "workspace.diff").write_text(DIFF)
    (run / "grade.json").write_text(json.dumps({"pass": True}))
    (run / "ignored_created.txt").write_text("")
    manifest = tmp_path / "repo_manifest.yaml"
    manifest.write_text('tests:\n  globs: ["tests/**"]\n')
    return task_dir, run, manifest


def test_grade_records_tree_judged_verdicts_and_their_cost_in_metrics_json(
    fake_server: FakeProviderServer, git_repo: GitRepo, tmp_path: Path
) -> None:
    base, _ = make_base(git_repo, tmp_path)
    task_dir, run, manifest = write_task(tmp_path, base)
    fake_server.script(valid(), tool_use(PROBES[1]), valid("fail"))
    metrics = grade_run(task_dir, run, manifest, anthropic(fake_server), checkout=git_repo.path)

    assert metrics.mergeable is False and "blocker B2 fails" in metrics.details.reasons
    data = json.loads((run / "metrics.json").read_text())
    assert data["details"]["assessment"]["blockers_tree_judged"] == ["B2"]
    assert data["details"]["assessment"]["blockers_not_measured"] == []
    judge_json = data["details"]["judge"]
    assert judge_json["tree_base_commit"] == base
    assert judge_json["tree"][0]["transcript"][0]["tool"] == "read_file"
    assert judge_json["tree_usage"]["cost_usd"] > 0 and judge_json["usage"]["cost_usd"] > 0
    assert [v["tree_judged"] for v in judge_json["verdicts"]] == [False, True, False, False, False]


def test_rubric_grade_with_a_checkout_needs_the_base_commit(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_base(git_repo, tmp_path)
    task_dir, run, manifest = write_task(tmp_path, None)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"default": {}}))
    argv = ["grade", str(task_dir), str(run), "--manifest", str(manifest), "--judge", f"scripted:{script}",
            "--checkout", str(git_repo.path), "--cache", str(tmp_path / "c.sqlite3"),
            "--store", str(tmp_path / "s.sqlite3")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "task.json" in err and "base_commit" in err
    assert not (run / "metrics.json").exists()
    assert main([*argv, "--tree-max-tool-calls", "-1"]) == 2
    assert "--tree-max-tool-calls" in capsys.readouterr().err


def test_rubric_report_shows_the_tree_judge_cost_apart(
    fake_server: FakeProviderServer, git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, _ = make_base(git_repo, tmp_path)
    task_dir, run, manifest = write_task(tmp_path, base)
    (run / "run.json").write_text(json.dumps({"task": TASK.id, "arm": "a", "model": "m"}))
    fake_server.script(valid(), tool_use(PROBES[1]), valid())
    grade_run(task_dir, run, manifest, anthropic(fake_server), checkout=git_repo.path)

    assert main(["report", str(run), "--json"]) == 0
    (use,) = json.loads(capsys.readouterr().out)["judges"]
    assert use["tree_judged"] == 1 and use["tree_judged_runs"] == 1
    assert use["cost_usd"] > 0 and use["tree_cost_usd"] > 0 and use["cost_usd"] != use["tree_cost_usd"]
    assert main(["report", str(run), "--md"]) == 0
    assert "tree judge cost $" in capsys.readouterr().out


def test_admission_rows_use_the_tree_judge_with_a_checkout(
    fake_server: FakeProviderServer, git_repo: GitRepo, tmp_path: Path
) -> None:
    from grading.admission.check import check_task

    base, _ = make_base(git_repo, tmp_path)
    task_dir, _, manifest = write_task(tmp_path, base)
    (task_dir / "oracle.diff").write_text(DIFF)
    settings = JudgeSettings(concurrency=1)  # rows one after another: the script is answered in order
    without = check_task(task_dir, manifest, anthropic(fake_server), settings=settings)
    assert without.rows[0].blockers_not_measured == ["B2"] and without.tree_calls == 0

    fake_server.script(
        valid("fail"),  # empty diff: the diff-only items
        valid("fail"),  # ... and B2, with no tool call
        valid("pass"),  # oracle: the diff-only items
        tool_use(PROBES[1]),  # ... and B2 after reading a backend
        valid("pass"),
    )
    report = check_task(task_dir, manifest, anthropic(fake_server), settings=settings, checkout=git_repo.path)
    assert report.admitted, [row.actual for row in report.rows]
    empty, oracle = report.rows
    assert "B2" in empty.blockers_failed and empty.blockers_not_measured == []
    assert "B2 tree-judged" in oracle.actual
    assert report.tree_calls == 3 and report.tree_usage.cost_usd > 0
    assert report.key != without.key  # the base commit is part of what was admitted


# --- objects the checkout does not hold ---------------------------------------------------------------------


def drop_object(git_repo: GitRepo, spec: str) -> str:
    """Delete the loose object ``spec`` names (as a pruned or partial clone lacks it); its id."""
    object_id = git_repo.git("rev-parse", spec).strip()
    (git_repo.path / ".git" / "objects" / object_id[:2] / object_id[2:]).unlink()
    return object_id


def damaged_base(git_repo: GitRepo) -> str:
    """A base commit whose tree lists src/lost.py, a symlink's target, and the directory gone/, none of
    which the repository holds any more; src/kept.py is intact."""
    git_repo.write("src/kept.py", "KEPT = 1\n")
    git_repo.write("src/lost.py", "LOST = 1  # needle\n")
    git_repo.write("gone/inner.py", "INNER = 1\n")
    os.symlink("kept.py", git_repo.path / "src" / "link")
    base = git_repo.commit("base")
    assert git_repo.git("count-objects").startswith("8 objects")  # all loose: none packed
    for spec in (f"{base}:src/lost.py", f"{base}:src/link", f"{base}:gone"):
        drop_object(git_repo, spec)
    return base


def test_a_missing_object_is_answered_as_unavailable_and_the_tools_carry_on(git_repo: GitRepo) -> None:
    base = damaged_base(git_repo)
    tree = BaseTree(git_repo.path, base)
    # git 2.39 prints BAD as the size of a blob it cannot find.
    assert b" BAD\tlost.py" in tree._git("ls-tree", "-z", "--long", f"{base}:src")
    tools = TreeTools(tree, [], max_answer_chars=4000)

    def ask(name: str, **arguments: Any) -> tuple[str, bool]:
        return tools.answer(ToolCall(id="t", name=name, arguments=arguments))

    text, error = ask("list_directory", path="src")
    assert not error
    assert "lost.py (object not available in this checkout)" in text
    assert "link (symlink; object not available in this checkout)" in text
    assert "kept.py (9 bytes)" in text
    text, error = ask("read_file", path="src/lost.py")
    assert error and "object not available in this checkout" in text and "'src/lost.py'" in text
    assert ask("read_file", path="src/kept.py") == (
        f"src/kept.py at base commit {base[:12]}, lines 1-1 of 1:\n     1\tKEPT = 1",
        False,
    )
    text, error = ask("read_file", path="src/link")
    assert error and "'src/link': object not available" in text
    text, error = ask("list_directory", path="gone")
    assert error and "'gone': object not available" in text
    text, error = ask("read_file", path="gone/inner.py")
    assert error and "'gone': object not available" in text
    text, error = ask("search_tree", pattern="needle|KEPT", path="src")
    assert not error and "src/kept.py:1: KEPT = 1" in text
    assert "[not searched, object not available in this checkout: src/lost.py]" in text
    assert "no such file" in ask("read_file", path="src/nothing.py")[0]  # absent is still absent
    assert not tools.has_line("src/lost.py", 1) and tools.has_line("src/kept.py", 1)
    assert tools.unavailable == ["src/link", "src/lost.py", "gone"]


def test_the_tree_judge_records_which_paths_were_unavailable(
    fake_server: FakeProviderServer, git_repo: GitRepo
) -> None:
    base = damaged_base(git_repo)
    probes = (
        ("list_directory", {"path": "src"}),
        ("read_file", {"path": "src/lost.py", "start_line": None, "end_line": None}),
    )
    fake_server.script(valid(), tool_use(*probes), valid("fail"))
    result = judge(anthropic(fake_server), BaseTree(git_repo.path, base))

    assert result.failure is None, result.failure
    assert result.verdict("B2") is not None
    (record,) = result.tree
    assert record.unavailable == ["src/link", "src/lost.py"]
    answers = tool_results(fake_server.model_calls()[2].body)
    assert [a["is_error"] for a in answers] == [False, True]
    assert "object not available in this checkout" in answers[1]["content"]


def test_a_search_goes_around_a_missing_directory(git_repo: GitRepo) -> None:
    # A missing blob, git grep reports and searches on; a missing tree stops it ("fatal: unable to read
    # tree"), which ended every search over the folder holding it with that error and no matches.
    for path in ("gone/inner.py", "pkg/sub/deep.py", "pkg/other.py", "pkg/sub2/x.py", "src/kept.py"):
        git_repo.write(path, "needle = 1\n")
    base = git_repo.commit("base")
    for spec in (f"{base}:gone", f"{base}:pkg/sub"):
        drop_object(git_repo, spec)
    tools = TreeTools(BaseTree(git_repo.path, base), [], max_answer_chars=4000)

    def search(path: str) -> str:
        text, error = tools.answer(
            ToolCall(id="t", name="search_tree", arguments={"pattern": "needle", "path": path})
        )
        assert not error, text
        return text

    found = search("")
    assert "3 matches" in found
    for path in ("pkg/other.py", "pkg/sub2/x.py", "src/kept.py"):
        assert f"{path}:1: needle = 1" in found
    assert found.endswith("[not searched, object not available in this checkout: gone, pkg/sub]")
    inside = search("pkg")
    assert "2 matches" in inside and inside.endswith("object not available in this checkout: pkg/sub]")
    assert tools.unavailable == ["gone", "pkg/sub"]


# --- whatever the repository holds -------------------------------------------------------------------------


def ask_tools(tools: TreeTools, name: str, **arguments: Any) -> tuple[str, bool]:
    text, error = tools.answer(ToolCall(id="t", name=name, arguments=arguments))
    text.encode("utf-8")  # what reaches the provider's SDK is always text it can send
    return text, error


def partial_clone(tmp_path: Path, filter_spec: str, *, reachable: bool = False) -> tuple[GitRepo, str]:
    """A clone of a two-file repository made with ``--filter=filter_spec`` from a local bare repository
    over file://, whose promisor remote is then moved away (unless ``reachable``): every object the clone
    lacks is unreachable."""
    origin = GitRepo(tmp_path / "origin")
    origin.write("src/kept.py", "KEPT = 1  # needle\n")
    origin.write("README.md", "read me\n")
    base = origin.commit("base")
    origin.git("clone", "-q", "--bare", str(origin.path), str(tmp_path / "bare.git"))
    env = {"GIT_TERMINAL_PROMPT": "0"}
    origin.git("-C", str(tmp_path / "bare.git"), "config", "uploadpack.allowFilter", "true")
    url = (tmp_path / "bare.git").as_uri()
    clone_args = ["--no-checkout", f"--filter={filter_spec}", url, str(tmp_path / "clone")]
    origin.git("clone", "-q", *clone_args, env=env)
    if not reachable:
        (tmp_path / "bare.git").rename(tmp_path / "gone.git")
    clone = GitRepo.__new__(GitRepo)  # made by git clone above, not by GitRepo's init
    clone.path = tmp_path / "clone"
    return clone, base


def test_a_partial_clone_whose_remote_is_unreachable_answers_not_available(
    fake_server: FakeProviderServer, tmp_path: Path
) -> None:
    # git would fetch each missing blob from the promisor remote (`ls-tree --long` asks for sizes) and die
    # when it cannot: a GitError out of answer() that ended the judge run.
    clone, base = partial_clone(tmp_path, "blob:none", reachable=True)
    packs = sorted((clone.path / ".git" / "objects" / "pack").iterdir())
    tree = BaseTree(clone.path, base)
    tools = TreeTools(tree, [], max_answer_chars=4000)
    # Even with the remote there, nothing is fetched: the tools read what the checkout holds.
    text, error = ask_tools(tools, "read_file", path="README.md")
    assert error and "'README.md': object not available in this checkout" in text
    assert sorted((clone.path / ".git" / "objects" / "pack").iterdir()) == packs
    (tmp_path / "bare.git").rename(tmp_path / "gone.git")

    text, error = ask_tools(tools, "list_directory", path="src")
    assert not error and "kept.py (object not available in this checkout)" in text
    text, error = ask_tools(tools, "read_file", path="README.md")
    assert error and "'README.md': object not available in this checkout" in text
    text, error = ask_tools(tools, "search_tree", pattern="needle", path="")
    assert not error and "0 matches" in text
    assert "[not searched, object not available in this checkout: README.md, src/kept.py]" in text
    assert not tools.has_line("src/kept.py", 1)
    assert tools.unavailable == ["README.md", "src/kept.py"]

    fake_server.script(valid(), tool_use(("read_file", {"path": "README.md"})), valid("fail"))
    result = judge(anthropic(fake_server), tree)
    assert result.failure is None, result.failure
    assert result.tree[0].unavailable == ["README.md"]


def test_a_missing_root_tree_is_not_available_never_an_empty_listing(
    tmp_path: Path, git_repo: GitRepo
) -> None:
    # A treeless clone lacks the root tree itself; so does a store that lost it.
    clone, base = partial_clone(tmp_path, "tree:0")
    git_repo.write("a.py", "A = 1\n")
    lost = git_repo.commit("base")
    drop_object(git_repo, f"{lost}^{{tree}}")
    for tree in (BaseTree(clone.path, base), BaseTree(git_repo.path, lost)):
        tools = TreeTools(tree, [], max_answer_chars=4000)
        for name, arguments in (
            ("list_directory", {"path": ""}),
            ("list_directory", {"path": "src"}),
            ("read_file", {"path": "a.py"}),
            ("search_tree", {"pattern": "A"}),
        ):
            text, error = ask_tools(tools, name, **arguments)
            assert error and "'(repository root)': object not available in this checkout" in text, text
        assert tools.unavailable == ["."]
        assert tree.paths_report() == ([], [""])


def test_a_blob_past_the_read_bound_is_read_in_its_first_bytes_only(git_repo: GitRepo) -> None:
    lines = [f"line {n:05} {'x' * 40}" for n in range(1, 2001)]  # 52 bytes each
    git_repo.write("big.txt", "\n".join(lines) + "\n")
    base = git_repo.commit("base")
    tree = BaseTree(git_repo.path, base)
    # git's own output bound stands in for the 512 MiB one that stopped a larger blob with a GitError.
    tree.git.max_output = 10_000
    tools = TreeTools(tree, [], max_answer_chars=4000, max_read_bytes=5200)

    text, error = ask_tools(tools, "read_file", path="big.txt", start_line=99)
    assert not error, text
    assert "lines 99-100 of 100 (all that is read: the first 5200 bytes of its 104000 bytes)" in text
    assert f"   100\t{lines[99]}" in text and "line 00101" not in text
    assert "[the file goes on past the 5200 bytes read; the rest cannot be read]" in text
    text, error = ask_tools(tools, "read_file", path="big.txt", start_line=101)
    assert error and "read in the first 5200 bytes of its 104000 bytes only, lines 1-100" in text
    assert tools.has_line("big.txt", 100) and not tools.has_line("big.txt", 101)
    assert tree.read("big.txt", 52) == lines[0].encode() + b"\n"
    assert tree.line_count("big.txt") == 2000  # counted as git prints it, never held whole


def test_the_real_read_bound_holds_for_a_blob_larger_than_it(git_repo: GitRepo) -> None:
    line = b"y" * 63 + b"\n"
    size = MAX_READ_BYTES + 4 * len(line) * 1024
    blob = (
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin"],
            cwd=git_repo.path,
            input=line * (size // len(line)),
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    git_repo.git("update-index", "--add", "--cacheinfo", f"100644,{blob},huge.txt")
    git_repo.git("commit", "-q", "-m", "huge")
    tree = BaseTree(git_repo.path, git_repo.head())
    tree.git.max_output = MAX_READ_BYTES + 1024  # reading it whole would be a GitError
    tools = TreeTools(tree, [], max_answer_chars=4000)
    text, error = ask_tools(tools, "read_file", path="huge.txt", start_line=MAX_READ_BYTES // 64)
    assert not error, text
    assert f"the first {MAX_READ_BYTES} bytes of its {size} bytes" in text


def test_a_name_that_is_not_utf8_is_shown_quoted_and_read_by_that_form(
    fake_server: FakeProviderServer, git_repo: GitRepo
) -> None:
    git_repo.write(os.fsdecode(b"caf\xe9.txt"), "latin-1 name\n")
    git_repo.write(os.fsdecode(b"d\xff/x.txt"), "in a latin-1 directory  # needle\n")
    git_repo.write("tab\there.txt", "a tab in the name\n")
    base = git_repo.commit("base")
    tools = TreeTools(BaseTree(git_repo.path, base), [], max_answer_chars=4000)

    text, error = ask_tools(tools, "list_directory", path="")
    assert not error
    assert '"caf\\351.txt" (13 bytes)' in text and '"d\\377"/' in text and '"tab\\there.txt"' in text
    for path in ('"caf\\351.txt"', '"d\\377/x.txt"', '"d\\377"/x.txt', '"tab\\there.txt"'):
        text, error = ask_tools(tools, "read_file", path=path)
        assert not error and "     1\t" in text, (path, text)
    assert ask_tools(tools, "read_file", path='"d\\377/x.txt"')[0].startswith('"d\\377/x.txt" at base commit')
    text, error = ask_tools(tools, "search_tree", pattern="needle")
    assert not error and '"d\\377/x.txt":1: in a latin-1 directory' in text
    text, error = ask_tools(tools, "read_file", path='"caf\\9.txt"')
    assert error and "not a well-formed quoted name" in text
    assert tools.has_line('"caf\\351.txt"', 1)

    # Through the real SDK: a lone surrogate in an answer made it raise UnicodeEncodeError.
    fake_server.script(valid(), tool_use(("list_directory", {"path": ""})), valid("fail"))
    result = judge(anthropic(fake_server), BaseTree(git_repo.path, base))
    assert result.failure is None, result.failure
    (answer,) = tool_results(fake_server.model_calls()[2].body)
    assert '"caf\\351.txt" (13 bytes)' in answer["content"]


def test_a_line_longer_than_an_answer_is_read_in_pieces(git_repo: GitRepo) -> None:
    long_line = "".join(f"<path d='M{n} {n}'/>" for n in range(3000))  # one 60,000-character line, as an svg
    git_repo.write("logo.svg", f"<svg>\n{long_line}\n</svg>\n")
    base = git_repo.commit("base")
    tools = TreeTools(BaseTree(git_repo.path, base), [], max_answer_chars=2000)

    pieces: list[str] = []
    column: int | None = None
    for _ in range(100):
        text, error = ask_tools(
            tools, "read_file", path="logo.svg", start_line=2, end_line=2, start_column=column
        )
        assert not error and len(text) <= 2000, text
        body = text.splitlines()
        pieces.append(body[1].split("\t", 1)[1])
        if len(body) == 2:
            break
        note = body[2]
        assert note.startswith(f"[line 2 has {len(long_line)} characters: cut at column"), note
        column = int(note.rsplit("start_column ", 1)[1].rstrip("]"))
    assert "".join(pieces) == long_line
    past = len(long_line) + 1
    text, error = ask_tools(tools, "read_file", path="logo.svg", start_line=2, start_column=past)
    assert error and "start_column" in text
    # Lines after a long first one are left for the next call, as before.
    text, _ = ask_tools(tools, "read_file", path="logo.svg")
    assert text.splitlines()[1] == "     1\t<svg>" and "[cut at line 1 by the answer size limit" in text


def test_a_git_failure_is_a_tool_error_and_the_tools_carry_on(git_repo: GitRepo) -> None:
    git_repo.write("a.py", "A = 1\n")
    base = git_repo.commit("base")
    tree = BaseTree(git_repo.path, base)
    tools = TreeTools(tree, [], max_answer_chars=4000)
    tree.git.max_output = 10  # the listing is longer: git is stopped with a GitError
    text, error = ask_tools(tools, "list_directory", path="")
    assert error and text == (
        "tool error: list_directory: git could not answer: git ls-tree printed more than 10 bytes"
    )
    tree.git.max_output = 1000
    assert ask_tools(tools, "read_file", path="a.py") == (
        f"a.py at base commit {base[:12]}, lines 1-1 of 1:\n     1\tA = 1",
        False,
    )

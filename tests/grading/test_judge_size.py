"""Size never makes a judge failure (§1, §4): the judge reads a binary file as one line, and a change whose
text is over the judge's limit is not mergeable, with no call. Real git diffs of a real repository."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path

import pytest

from grading.binary_text import judge_text
from grading.checks.outcome import grade_run
from grading.cli.rubric import main
from grading.diffs import BINARY_NOT_SHOWN, read_diff
from grading.errors import InputError
from grading.judge.backend import BackendError, BackendReply, JudgeRequest
from grading.judge.cache import MemoryCache, cache_key
from grading.judge.prompt import DEFAULT_MAX_DIFF_CHARS, render_request, select_items
from grading.judge.runner import JudgeSettings, judge_run
from grading.judge.specs import make_backend
from grading.loaders import load_rubric, load_task
from tests.grading.cli_helpers import own_stores
from tests.grading.judge.judge_helpers import FakeBackend, verdicts_json
from tests.grading.task_helpers import FIXED, Task, answer_run, answers

LAZY = {"src/calc.py": "def add(a, b):\n    return 4 if a == 2 else a - b\n"}
BLOB_SIZE = 400 * 1024
# A line of a GIT binary patch: a length letter, then base85 (65 characters for a full line of 52 bytes).
BASE85_LINE = re.compile(r"^z[0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~]{65}$", re.MULTILINE)


def random_bytes(n: int, seed: int) -> bytes:
    """``n`` random bytes that git takes for binary (a NUL byte first)."""
    return b"\0" + random.Random(seed).randbytes(n - 1)


@pytest.fixture
def task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Task:
    own_stores(tmp_path, monkeypatch)
    return Task(tmp_path)


def binary_run(task: Task, name: str, text: dict[str, str], blobs: dict[str, bytes]) -> Path:
    """A run (pass true) whose change is ``text`` plus the binary files ``blobs``."""
    return task.make_run(name, {**text, **blobs}, {"pass": True})


class NeverCalled(FakeBackend):
    """A judge that fails the test if it is asked anything."""

    async def complete(self, request: JudgeRequest) -> BackendReply:
        raise AssertionError("the judge was called on a change too large to review")


# --- what the judge reads of a binary file ----------------------------------------------------------------


def test_the_judge_reads_one_line_per_binary_file_with_its_sizes_and_sha256(task: Task) -> None:
    old_blob = random_bytes(3000, 1)
    gone = random_bytes(700, 2)
    task.repo.write("src/old.bin", old_blob)
    task.repo.write("src/gone.bin", gone)
    task.repo.commit("binaries")
    new_blob = random_bytes(BLOB_SIZE, 3)
    changed = old_blob[:1000] + random_bytes(50, 4) + old_blob[1000:]  # git writes a delta for this one
    files = {**LAZY, "src/blob.bin": new_blob, "src/old.bin": changed, "src/gone.bin": None}
    diff = task.set_diff("calib/lazy.diff", files).decode()
    assert len(diff) > BLOB_SIZE and BASE85_LINE.search(diff)

    shown = judge_text(diff)
    assert len(shown) < 2000 and "GIT binary patch" not in shown and not BASE85_LINE.search(shown)
    summaries = [line for line in shown.splitlines() if line.startswith(BINARY_NOT_SHOWN)]
    sha = {name: hashlib.sha256(data).hexdigest() for name, data in (("new", new_blob), ("gone", gone))}
    assert summaries == [
        f"{BINARY_NOT_SHOWN}src/blob.bin (added): old absent; new {BLOB_SIZE} bytes, sha256 {sha['new']}",
        f"{BINARY_NOT_SHOWN}src/gone.bin (deleted): old 700 bytes, sha256 {sha['gone']}; new absent",
        f"{BINARY_NOT_SHOWN}src/old.bin (modified): old 3000 bytes (sha256 not computed: a delta against the "
        "other side); new 3050 bytes (sha256 not computed: a delta against the other side)",
    ]
    # The text hunks are untouched, and the one diff reader reads the result as the same change.
    assert "+    return 4 if a == 2 else a - b\n" in shown
    assert [f.change for f in read_diff(shown).files] == [f.change for f in read_diff(diff).files]
    assert judge_text(shown) == shown
    text_only = task.set_diff("calib/alt.diff", LAZY).decode()
    assert judge_text(text_only) == text_only


def test_a_corrupt_or_oversized_literal_is_named_without_a_hash(task: Task) -> None:
    diff = task.set_diff("calib/lazy.diff", {**LAZY, "src/blob.bin": random_bytes(5000, 5)}).decode()
    # A literal that claims more bytes than its data inflates to: no sha256, and no crash.
    lying = diff.replace("literal 5000\n", "literal 6000\n")
    assert "6000 bytes (sha256 not computed: the literal does not inflate to its stated size)" in judge_text(
        lying
    )
    # One that inflates past its stated size (a bomb would) is cut one byte after it.
    bomb = diff.replace("literal 5000\n", "literal 100\n")
    assert (
        "new 100 bytes (sha256 not computed: the literal does not inflate to its stated size)"
        in judge_text(bomb)
    )


def test_a_literal_over_the_hashing_limit_is_not_inflated(
    task: Task, monkeypatch: pytest.MonkeyPatch
) -> None:
    diff = task.set_diff("calib/lazy.diff", {**LAZY, "src/blob.bin": random_bytes(5000, 12)}).decode()
    monkeypatch.setattr("grading.binary_text.BINARY_HASH_MAX_BYTES", 4999)
    assert "new 5000 bytes (sha256 not computed: over 4999 bytes)" in judge_text(diff)


def test_every_backend_and_the_cache_key_see_the_summary_never_the_literal(
    task: Task, tmp_path: Path
) -> None:
    blob = random_bytes(BLOB_SIZE, 6)
    diff = task.set_diff("calib/lazy.diff", {**LAZY, "src/blob.bin": blob}).decode()
    rubric = load_rubric(task.dir / "rubric.json", check_files=False)
    items, _ = select_items(rubric, config_edited=False)
    request = render_request(load_task(task.dir), rubric, items, diff, nonce="n0nce")
    assert request.diff_text == judge_text(diff)
    assert request == render_request(load_task(task.dir), rubric, items, judge_text(diff), nonce="n0nce")
    backends = [
        task.backend(),
        make_backend("anthropic:claude-sonnet-4-5-20250929", api_key="k", base_url="http://127.0.0.1:9"),
        make_backend("openai:gpt-5-2025-08-07", api_key="k", base_url="http://127.0.0.1:9"),
        make_backend("claude-code:claude-sonnet-4-5-20250929", api_key="k"),
    ]
    for backend in backends:
        body = json.dumps(backend.render(request))
        assert hashlib.sha256(blob).hexdigest() in body, backend.spec
        assert len(body) < 30_000 and not BASE85_LINE.search(body.replace("\\n", "\n")), backend.spec
    # Two binaries of the same size differ in what the judge reads, so they never share a cached verdict.
    other = task.set_diff("calib/alt.diff", {**LAZY, "src/blob.bin": random_bytes(BLOB_SIZE, 7)}).decode()
    other_request = render_request(load_task(task.dir), rubric, items, other, nonce="n0nce")
    assert cache_key(backends[1], request) != cache_key(backends[1], other_request)


# --- a run with a big binary file: judged, never a judge failure ------------------------------------------


def test_a_lazy_change_with_a_400_kb_binary_is_judged_on_a_small_input(task: Task) -> None:
    blob = random_bytes(BLOB_SIZE, 8)
    run = binary_run(task, "lazy-binary", LAZY, {"src/data.bin": blob})
    assert (run / "workspace.diff").stat().st_size > DEFAULT_MAX_DIFF_CHARS  # over the limit as bytes
    backend = FakeBackend([lambda r: FakeBackend().reply(verdicts_json(r.item_ids, "fail"))])
    metrics = grade_run(task.dir, run, task.manifest, backend, cache=MemoryCache())
    assert (metrics.mergeable, metrics.merge_score, metrics.judge_failure) == (False, 0.0, False)
    assert metrics.details.status == "not_mergeable"
    assert metrics.details.reasons == ["blocker B1 fails", "blocker B2 fails"]
    [request] = backend.requests
    assert len(request.diff_block) < 3000 and "GIT binary patch" not in request.diff_block
    assert (
        f"{BINARY_NOT_SHOWN}src/data.bin (added): old absent; new {BLOB_SIZE} bytes, sha256 "
        f"{hashlib.sha256(blob).hexdigest()}\n" in request.diff_block
    )
    judge = metrics.details.judge
    assert judge is not None and judge.calls == 1 and judge.too_large_to_review is None


def test_the_scripted_judge_keys_its_answers_on_what_the_judge_reads(task: Task) -> None:
    run = binary_run(task, "lazy-binary", LAZY, {"src/data.bin": random_bytes(BLOB_SIZE, 9)})
    shown = judge_text((run / "workspace.diff").read_text())
    task.script["by_diff_sha256"][hashlib.sha256(shown.encode()).hexdigest()] = answers(("N2",))
    metrics = grade_run(task.dir, run, task.manifest, task.backend())
    assert metrics.mergeable is True and metrics.merge_score == pytest.approx(2 / 3)


# --- a text change over the limit: not mergeable, no call -------------------------------------------------

BIG_LINE = "x = 1  # padding the change past the judge's limit\n"


def test_a_text_change_over_the_limit_is_not_mergeable_and_no_judge_is_called(task: Task) -> None:
    run = binary_run(task, "big", {**FIXED, "src/big.py": BIG_LINE * 100}, {"src/data.bin": b"\0" * 10})
    shown = judge_text((run / "workspace.diff").read_text())
    settings = JudgeSettings(max_diff_chars=1000)
    metrics = grade_run(task.dir, run, task.manifest, NeverCalled(), NeverCalled(model="gpt-5"),
                        settings=settings, allow_same_family=True)  # fmt: skip
    reason = (
        f"too large to review: 102 changed lines / {len(shown)} characters of diff, the judge reads at most "
        "1000 characters (a binary file counts as one summary line)"
    )
    assert (metrics.mergeable, metrics.merge_score, metrics.judge_failure) == (False, 0.0, False)
    assert (metrics.details.status, metrics.details.reasons) == ("not_mergeable", [reason])
    assert metrics.details.assessment is not None
    assert metrics.details.assessment.too_large_to_review == reason
    judge = metrics.details.judge
    assert judge is not None and (judge.too_large_to_review, judge.failure, judge.calls) == (reason, None, 0)
    assert metrics.details.second_judge is None
    assert metrics.details.second_judge_skipped == f"not called: {reason}"
    assert metrics.details.judge_skipped is None  # the gate held: reports count the test pass
    written = json.loads((run / "metrics.json").read_text())
    assert (written["mergeable"], written["judge_failure"], written["details"]["reasons"]) == (
        False,
        False,
        [reason],
    )


def test_a_change_over_the_limit_and_out_of_scope_gives_both_reasons(task: Task) -> None:
    run = task.make_run("big", {**FIXED, "docs/big.txt": BIG_LINE * 100}, {"pass": True})
    metrics = grade_run(
        task.dir, run, task.manifest, NeverCalled(), settings=JudgeSettings(max_diff_chars=1000)
    )
    assert metrics.mergeable is False and metrics.judge_failure is False
    assert metrics.details.reasons[0] == "scope check failed"
    assert metrics.details.reasons[1].startswith("too large to review: 102 changed lines / ")


def test_the_tree_judge_is_not_called_on_a_change_too_large_to_review(task: Task) -> None:
    task.rubric["blockers"][1]["needs_tree"] = True
    task.write_rubric()
    run = task.make_run("big", {**FIXED, "src/big.py": BIG_LINE * 100}, {"pass": True})
    result = judge_run(load_task(task.dir), load_rubric(task.dir / "rubric.json", check_files=False),
                       (run / "workspace.diff").read_text(), NeverCalled(), config_edited=False,
                       settings=JudgeSettings(max_diff_chars=1000))  # fmt: skip
    assert result.too_large_to_review is not None and result.failure is None
    assert (result.not_measured, result.not_measured_reason) == (
        ["B2"],
        "not judged: the change is too large to review",
    )


def test_the_command_line_counts_a_change_over_the_limit_as_not_mergeable(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    run = task.make_run("big", {**FIXED, "src/big.py": BIG_LINE * 9000}, {"pass": True})  # > 400,000 chars
    task.backend()
    judge = ["--judge", f"scripted:{task.judge}", "--json"]
    assert main(["grade", str(task.dir), str(run), "--manifest", str(task.manifest), *judge]) == 1
    metrics = json.loads(capsys.readouterr().out)
    assert (metrics["mergeable"], metrics["judge_failure"], metrics["details"]["status"]) == (
        False,
        False,
        "not_mergeable",
    )
    assert metrics["details"]["reasons"][0].startswith("too large to review: 9002 changed lines / ")
    argv = ["judge", str(task.dir), str(run), *judge]
    assert main(argv) == 0  # no judge failure
    result = json.loads(capsys.readouterr().out)
    assert result["failure"] is None and result["too_large_to_review"].startswith("too large to review")
    assert main([*argv, "--render-only"]) == 0
    rendered = json.loads(capsys.readouterr().out)["requests"][0]
    assert rendered["request"] is None and rendered["too_large_to_review"].startswith("too large to review")
    assert main(["grade", str(task.dir), str(run), "--manifest", str(task.manifest), "--judge",
                 f"scripted:{task.judge}"]) == 1  # fmt: skip
    assert "not called: too large to review: 9002 changed lines" in capsys.readouterr().out


# --- faults of the model API stay judge failures ----------------------------------------------------------


def test_an_api_fault_on_a_run_with_a_big_binary_is_still_a_judge_failure(task: Task) -> None:
    run = binary_run(task, "lazy-binary", LAZY, {"src/data.bin": random_bytes(BLOB_SIZE, 10)})
    backend = FakeBackend([BackendError("HTTP 529: overloaded")])
    metrics = grade_run(task.dir, run, task.manifest, backend)
    assert (metrics.mergeable, metrics.merge_score, metrics.judge_failure) == (None, None, True)
    assert metrics.details.status == "judge_failure"
    assert "HTTP 529: overloaded" in metrics.details.reasons[0]
    assert len(backend.requests) == 1 and "GIT binary patch" not in backend.requests[0].diff_block


# --- calibration diffs go through the same rendering ------------------------------------------------------


def test_a_calibration_diff_with_a_big_binary_is_judged_and_one_over_the_limit_is_refused(task: Task) -> None:
    task.set_diff("calib/lazy.diff", {**LAZY, "src/data.bin": random_bytes(BLOB_SIZE, 11)})
    report = task.check()
    lazy = next(row for row in report.rows if row.kind == "lazy")
    assert lazy.judge_failure is None and lazy.blockers_failed == ["B1"]
    task.set_diff("calib/lazy.diff", {**LAZY, "src/big.py": BIG_LINE * 100})
    with pytest.raises(InputError, match=r"lazy\.diff: too large to review: 102 changed lines"):
        task.check(settings=JudgeSettings(max_diff_chars=1000))


# --- reports count it as not mergeable, never as a judge failure ---------------------------------------


def test_a_report_counts_a_change_too_large_to_review_as_measured_and_not_mergeable(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    good = task.make_run("good", FIXED, {"pass": True})
    answer_run(task, good, answers())
    big = task.make_run("big", {**FIXED, "src/big.py": BIG_LINE * 100}, {"pass": True})
    for run in (good, big):
        grade_run(task.dir, run, task.manifest, task.backend(), settings=JudgeSettings(max_diff_chars=1000))
    assert main(["report", str(good), str(big), "--json"]) == 0
    [cell] = json.loads(capsys.readouterr().out)["cells"]
    assert (cell["runs"], cell["measured"], cell["judge_failures"], cell["grader_failures"]) == (2, 2, 0, 0)
    assert cell["test_pass_rate"]["value"] == 1.0  # the gate held on both
    assert cell["mergeable_rate"]["value"] == 0.5

"""Negatives generated from the oracle: each mutation kind on a real multi-file oracle in a temp git repo
(it applies to the base, differs from the oracle, and leaves out what its description says), and mutants
judged like admission rows through the real runner with the scripted judge."""

from __future__ import annotations

import ast
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

from grading.basetree import BaseTree
from grading.diffs import read_diff
from grading.errors import InputError
from grading.judge.cache import MemoryCache
from grading.mutants import diff as mutants_diff
from grading.mutants import parse as mutants_parse
from grading.mutants.derive import DEFAULT_MAX_MUTANTS, MUTANT_ID, Mutant, derive_mutants
from grading.mutants.judging import check_mutants, load_harmless
from grading.mutants.kinds import (
    KINDS,
    MAX_COMPARED_BYTES,
    MAX_CONDITION_LINE_BYTES,
    MAX_CONDITION_MUTANTS,
    condition_change,
)
from tests.gitrepo import GitRepo
from tests.grading.diff_helpers import workspace_diff
from tests.grading.mutant_helpers import BASE, LIMITS_FIXED, ORACLE, Oracle, Task, verdicts

KERNELS = ["src/cpu/kernel.py", "src/gpu/kernel.py", "src/sycl/kernel.py"]


@pytest.fixture
def oracle(git_repo: GitRepo) -> Oracle:
    return Oracle(git_repo)


def by_kind(mutants: list[Mutant], kind: str) -> list[Mutant]:
    return [m for m in mutants if m.kind == kind]


def hunk_lines(diff: bytes) -> list[bytes]:
    """The hunk headers and changed lines, what git's own diff of the same tree must repeat."""
    return [line for line in diff.split(b"\n") if line[:2] == b"@@" or line[:1] in (b"+", b"-")]


def test_the_oracle_gives_every_kind_and_each_mutant_applies_and_differs(
    oracle: Oracle, tmp_path: Path
) -> None:
    derived = derive_mutants(oracle.diff)
    mutants = derived.mutants
    counts = {kind: len(by_kind(mutants, kind)) for kind in KINDS}
    assert counts == {"drop-hunk": 2, "revert-file": 5, "one-place": 3, "revert-condition": 2}
    assert [m.kind for m in mutants] == sorted((m.kind for m in mutants), key=KINDS.index)
    # A single-hunk file's hunk left out is that file reverted: kept once, as the file.
    assert derived.duplicates == 4 and not derived.capped and derived.derived == len(mutants) == 12
    assert len({m.diff for m in mutants}) == len(mutants)
    for mutant in mutants:
        assert MUTANT_ID.fullmatch(mutant.id), mutant.id
        assert mutant.id == f"{mutant.kind}:{hashlib.sha256(mutant.diff).hexdigest()[:10]}"
        assert mutant.diff != oracle.diff
        tree = oracle.apply(mutant.diff, tmp_path)
        assert tree != ORACLE and tree != BASE, mutant.description
        read_diff(mutant.diff, mutant.id)  # the one diff reader takes it, strictly


def test_ids_are_stable(oracle: Oracle) -> None:
    first = [(m.id, m.description) for m in derive_mutants(oracle.diff).mutants]
    assert first == [(m.id, m.description) for m in derive_mutants(oracle.diff).mutants]


def test_revert_file_leaves_exactly_that_file_at_the_base(oracle: Oracle, tmp_path: Path) -> None:
    mutants = by_kind(derive_mutants(oracle.diff).mutants, "revert-file")
    assert sorted(m.description.split()[1] for m in mutants) == sorted(BASE)
    for mutant in mutants:
        path = mutant.description.split()[1]
        tree = oracle.apply(mutant.diff, tmp_path)
        assert tree == {**ORACLE, path: BASE[path]}
        assert hunk_lines(oracle.regenerated()) == hunk_lines(mutant.diff)


def test_drop_hunk_leaves_out_one_hunk_and_moves_the_later_ones(oracle: Oracle, tmp_path: Path) -> None:
    first, second = by_kind(derive_mutants(oracle.diff).mutants, "drop-hunk")
    assert first.description.startswith("leaves out hunk 1 of 2 in src/common/limits.py (old line 1")
    assert (
        second.description
        == "leaves out hunk 2 of 2 in src/common/limits.py (old line 11, def unused_two():)"
    )
    tree = oracle.apply(first.diff, tmp_path)
    assert tree["src/common/limits.py"] == LIMITS_FIXED.replace(
        "    # a fraction of exactly the limit is valid\n    return value <= limit",
        "    return value < limit",
    )
    assert {k: v for k, v in tree.items() if k != "src/common/limits.py"} == {
        k: v for k, v in ORACLE.items() if k != "src/common/limits.py"
    }
    # The second hunk's new-side start moved up by the line the first one added: git's own diff agrees.
    assert hunk_lines(oracle.regenerated()) == hunk_lines(first.diff)
    assert b"@@ -11,6 +11,6 @@" in first.diff and b"@@ -11,6 +12,6 @@" in oracle.diff
    tree = oracle.apply(second.diff, tmp_path)
    assert tree["src/common/limits.py"] == LIMITS_FIXED.replace(
        "and ok and count < 1000:", "and ok:"
    ).replace("return None", "return 0")
    assert hunk_lines(oracle.regenerated()) == hunk_lines(second.diff)


def test_one_place_keeps_the_fix_in_one_of_the_near_identical_places(oracle: Oracle, tmp_path: Path) -> None:
    mutants = by_kind(derive_mutants(oracle.diff).mutants, "one-place")
    assert len(mutants) == 3
    for mutant, kept in zip(mutants, KERNELS, strict=True):
        assert f"keeps the fix only in hunk 1 of 1 in {kept}" in mutant.description
        assert "one of 3 near-identical places" in mutant.description
        tree = oracle.apply(mutant.diff, tmp_path)
        expected = {**ORACLE, **{k: BASE[k] for k in KERNELS if k != kept}}
        assert tree == expected
        assert hunk_lines(oracle.regenerated()) == hunk_lines(mutant.diff)


def test_revert_condition_restores_the_old_line_only(oracle: Oracle, tmp_path: Path) -> None:
    operator, condition = by_kind(derive_mutants(oracle.diff).mutants, "revert-condition")
    assert operator.description == (
        "swaps the operator back in src/common/limits.py (new line 3): "
        "`return value <= limit` -> `return value < limit`"
    )
    tree = oracle.apply(operator.diff, tmp_path)
    assert tree == {**ORACLE, "src/common/limits.py": LIMITS_FIXED.replace("value <= limit", "value < limit")}
    assert condition.description.startswith("swaps the condition back in src/common/limits.py (new line 15)")
    tree = oracle.apply(condition.diff, tmp_path)
    assert tree == {**ORACLE, "src/common/limits.py": LIMITS_FIXED.replace(" and count < 1000:", ":")}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("return value < limit", "return value <= limit", "operator"),
        ("ok = a and b", "ok = a or b", "operator"),
        ("if x:", "if not x:", "operator"),
        ("while (i < n) {", "while (i < n && !done) {", "condition"),
        ("} else if (a == b) {", "} else if (a === b) {", "operator"),
        ("} else if (a == b) {", "} else if (a == b && ready()) {", "condition"),
        ("assert size > 0", "assert size >= 1", "condition"),
        ("if x > 1:", "if  x > 1 :", None),  # whitespace only
        ("return a + b", "return a - b", None),  # arithmetic, not a condition
        ("total = compute(x)", "total = compute(y)", None),
        ("if x > 1:", "while x > 1:", None),  # another statement, not another condition
        ("if x > 1:", "if (x > 1):", None),  # parentheses alone change nothing
    ],
)
def test_condition_change(old: str, new: str, expected: str | None) -> None:
    assert condition_change(old, new) == expected


def test_a_line_pair_at_the_end_of_a_file_without_newline_is_left_alone(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    git_repo.write("a.py", "x = 1\nif x > 1:\n    pass")
    base = git_repo.commit("base")
    git_repo.write("a.py", "x = 2\nif x >= 1:\n    pass")
    diff = workspace_diff(git_repo, base)
    assert b"\\ No newline at end of file" in diff
    # The pair is not the file's last line: it is swapped back, and the diff stays valid around the note.
    [mutant] = derive_mutants(diff).mutants
    assert mutant.kind == "revert-condition"
    (tmp_path / "m.diff").write_bytes(mutant.diff)
    git_repo.git("reset", "-q", "--hard", base)
    git_repo.git("apply", str(tmp_path / "m.diff"))
    assert (git_repo.path / "a.py").read_text() == "x = 2\nif x > 1:\n    pass"
    git_repo.git("reset", "-q", "--hard", base)
    git_repo.write("a.py", "x = 2\nif x >= 1:")
    git_repo.commit("condition last")
    git_repo.write("a.py", "x = 3\nif x > 1:")
    diff = workspace_diff(git_repo, "HEAD")
    # The changed condition is the last line, without a newline: its pair is not touched, and with one
    # hunk in one file there is no mutant at all.
    assert diff.count(b"\\ No newline at end of file") == 2
    assert derive_mutants(diff).mutants == []


def test_a_single_hunk_fix_has_no_mutant_but_its_condition(git_repo: GitRepo) -> None:
    git_repo.write("a.py", "def f(x):\n    return x + 1\n")
    base = git_repo.commit("base")
    git_repo.write("a.py", "def f(x):\n    return x + 2\n")
    derived = derive_mutants(workspace_diff(git_repo, base))
    # Leaving out the only hunk is the empty diff: the admission's empty row, not a mutant.
    assert derived.mutants == [] and derived.derived == 0


def test_binary_files_are_reverted_whole(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.write("a.py", "x = 1\n")
    git_repo.write("logo.png", b"\x89PNG\r\n\x1a\n\x00\x01")
    base = git_repo.commit("base")
    git_repo.write("a.py", "x = 2\n")
    git_repo.write("logo.png", b"\x89PNG\r\n\x1a\n\x00\x02")
    diff = workspace_diff(git_repo, base)
    mutants = derive_mutants(diff).mutants
    assert sorted(m.description.split()[1] for m in mutants) == ["a.py", "logo.png"]
    for mutant in mutants:
        (tmp_path / "m.diff").write_bytes(mutant.diff)
        git_repo.git("reset", "-q", "--hard", base)
        git_repo.git("apply", "--check", str(tmp_path / "m.diff"))


def test_the_cap_takes_each_kind_in_turn_and_says_so(oracle: Oracle) -> None:
    derived = derive_mutants(oracle.diff, max_mutants=5, base=BaseTree(oracle.repo.path, oracle.base).read)
    assert derived.capped and derived.derived == 12 and len(derived.mutants) == 5
    assert [m.kind for m in derived.mutants] == [
        "drop-hunk", "drop-hunk", "revert-file", "one-place", "revert-condition"]  # fmt: skip
    assert derived.notes == [
        "capped: 12 mutants derived, 5 judged (taken in turn from each kind); "
        "raise --max-mutants to judge more"
    ]
    assert derive_mutants(oracle.diff, max_mutants=0).mutants == []
    assert DEFAULT_MAX_MUTANTS >= 12
    with pytest.raises(InputError, match="--max-mutants"):
        derive_mutants(oracle.diff, max_mutants=-1)


def test_only_the_mutants_kept_are_rendered(oracle: Oracle, monkeypatch: pytest.MonkeyPatch) -> None:
    # Mutants are told apart by what they leave out, so rendering (a pass over the whole oracle each) is
    # done for the judged ones only: derivation stays linear in the oracle's size.
    rendered: list[object] = []
    render = mutants_diff.OracleLines.render

    def counting(self: Any, edit: Any) -> bytes:
        rendered.append(edit)
        return render(self, edit)

    monkeypatch.setattr(mutants_diff.OracleLines, "render", counting)
    derived = derive_mutants(oracle.diff, max_mutants=3)
    assert derived.derived == 12 and len(derived.mutants) == 3 and len(rendered) == 3
    full = derive_mutants(oracle.diff)
    assert derived.duplicates == full.duplicates == 4
    assert {m.id for m in derived.mutants} <= {m.id for m in full.mutants}


def lock_block(n: int, version: str) -> str:
    """One package of a lock file: a version and hashes that all change when it is bumped."""
    digest = hashlib.sha256(f"{n}-{version}".encode()).hexdigest()
    hashes = "".join(
        f'    {{file = "pkg{n}-{version}-{k}.whl", hash = "sha256:{digest}"}},\n' for k in range(8)
    )
    return f'[[package]]\nname = "pkg{n}"\nversion = "{version}"\nfiles = [\n{hashes}]\n\n'


def test_a_mutant_is_rendered_without_a_step_per_untouched_hunk(
    git_repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A rename across a file gives thousands of one-line hunks; each judged mutant is rendered whole, and a
    # step per hunk made that the larger part of deriving (12 s for 80,000 hunks). Hunks the edit does not
    # touch are copied as runs.
    git_repo.write("names.py", "".join(f"old_{i} = {i}\n" + "\n" * 7 for i in range(400)))
    base = git_repo.commit("base")
    git_repo.write("names.py", "".join(f"new_{i} = {i}\n" + "\n" * 7 for i in range(400)))
    diff = workspace_diff(git_repo, base)
    body, render = mutants_diff.OracleLines.body, mutants_diff.OracleLines.render
    rendering: list[bool] = []
    steps: list[object] = []

    def counting_body(self: Any, ref: Any) -> list[bytes]:
        if rendering:
            steps.append(ref)
        return body(self, ref)

    def flagged_render(self: Any, edit: Any) -> bytes:
        rendering.append(True)
        try:
            return render(self, edit)
        finally:
            rendering.clear()

    monkeypatch.setattr(mutants_diff.OracleLines, "body", counting_body)
    monkeypatch.setattr(mutants_diff.OracleLines, "render", flagged_render)
    derived = derive_mutants(diff, max_mutants=3)
    assert derived.derived == 400 and len(derived.mutants) == 3
    assert steps == []
    for mutant in derived.mutants:  # each leaves out one hunk and keeps the other 399 as they were
        assert len(read_diff(mutant.diff, "m").files[0].hunks) == 399


def test_hunks_after_a_left_out_one_are_renumbered_as_git_would(git_repo: GitRepo, tmp_path: Path) -> None:
    # A left-out hunk that added lines moves every later hunk of its file: they are rendered from a template
    # of the file's hunks with their new starts left to fill ("%" in the lines must stay as it is), in
    # one formatting rather than a step per hunk.
    rows = [f"row_{i} = '%d %s %%' % ({i}, 'x')\n" for i in range(300)]
    git_repo.write("rows.py", "".join(rows))
    base = git_repo.commit("base")
    added = "".join(row + (f"extra_{i} = '%%' % ()\n" if i % 10 == 0 else "") for i, row in enumerate(rows))
    git_repo.write("rows.py", added)
    diff = workspace_diff(git_repo, base)
    assert len(read_diff(diff, "oracle").files[0].hunks) == 30
    first = derive_mutants(diff, max_mutants=1).mutants[0]
    assert first.description.startswith("leaves out hunk 1 of 30 in rows.py")
    git_repo.git("reset", "-q", "--hard", base)
    patch = tmp_path / "mutant.diff"
    patch.write_bytes(first.diff)
    git_repo.git("apply", "--check", str(patch))
    git_repo.git("apply", str(patch))
    assert (git_repo.path / "rows.py").read_text() == added.replace("extra_0 = '%%' % ()\n", "")
    assert hunk_lines(workspace_diff(git_repo, base)) == hunk_lines(first.diff)
    assert b"@@ -289,6 +318,7 @@" in diff and b"@@ -289,6 +317,7 @@" in first.diff


def test_a_hunk_over_the_size_bound_is_never_one_place(git_repo: GitRepo) -> None:
    # Two lock files rewritten the same way: near-identical hunks, but each far over the bound, as a
    # regenerated lock file is; they are not compared (a note counts them), so no one-place mutant.
    for name in ("a/poetry.lock", "b/poetry.lock"):
        git_repo.write(name, "".join(lock_block(n, "1.0") for n in range(4)))
    git_repo.write("c.py", "LIMIT = 1\n")
    git_repo.write("d.py", "LIMIT = 1\n")
    base = git_repo.commit("base")
    for name in ("a/poetry.lock", "b/poetry.lock"):
        git_repo.write(name, "".join(lock_block(n, "2.0") for n in range(4)))
    git_repo.write("c.py", "LIMIT = 1000  # raised for large tables\n")
    git_repo.write("d.py", "LIMIT = 1000  # raised for large tables\n")
    diff = workspace_diff(git_repo, base)
    [lock_file] = [part for part in diff.split(b"diff --git") if b"a/poetry.lock" in part]
    assert len(lock_file) > MAX_COMPARED_BYTES
    derived = derive_mutants(diff)
    one_place = by_kind(derived.mutants, "one-place")
    # The small twin hunks (c.py, d.py) still are the same fix in two places.
    assert [m.description.split(",")[0] for m in one_place] == [
        "keeps the fix only in hunk 1 of 1 in c.py (old line 1)",
        "keeps the fix only in hunk 1 of 1 in d.py (old line 1)",
    ]
    assert (
        f"one-place: 2 hunks with more than {MAX_COMPARED_BYTES} bytes of changed lines not compared "
        "(not a fix repeated by hand)"
    ) in derived.notes


def parsed_tree(repo: GitRepo, base: str, diff: bytes, tmp: Path) -> dict[str, str]:
    """Apply ``diff`` to ``base`` with git; the .py files, each checked to parse."""
    repo.git("reset", "-q", "--hard", base)
    (tmp / "m.diff").write_bytes(diff)
    repo.git("apply", str(tmp / "m.diff"))
    out = {}
    for path in sorted(repo.path.glob("*.py")):
        text = path.read_text()
        compile(text, str(path), "exec")
        out[path.name] = text
    return out


def test_a_restored_condition_keeps_the_new_lines_indentation(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.write("a.py", "def f(x, lock):\n    if x > 1:\n        return 1\n    return 0\n")
    base = git_repo.commit("base")
    git_repo.write(
        "a.py", "def f(x, lock):\n    with lock:\n        if x >= 1:\n            return 1\n    return 0\n"
    )
    [mutant] = derive_mutants(workspace_diff(git_repo, base)).mutants
    assert mutant.kind == "revert-condition"
    assert parsed_tree(git_repo, base, mutant.diff, tmp_path) == {
        "a.py": "def f(x, lock):\n    with lock:\n        if x > 1:\n            return 1\n    return 0\n"
    }


def test_lines_pair_only_when_both_hold_a_whole_condition(git_repo: GitRepo, tmp_path: Path) -> None:
    # The old condition spans two lines: its first line shares the head "if" with the new one, but
    # restoring that fragment alone leaves an open bracket. It is not paired.
    git_repo.write("a.py", "def f(x, y):\n    if ready(x) and (\n            y > 0):\n        return 1\n")
    base = git_repo.commit("base")
    git_repo.write("a.py", "def f(x, y):\n    if ready(x) and y >= 0:\n        return 1\n")
    assert derive_mutants(workspace_diff(git_repo, base)).mutants == []
    # A C-like "} else if (" fragment is not a whole condition either; the whole line is.
    git_repo.write(
        "b.c",
        "int f(int a) {\n  if (a) {\n    return 1;\n  } else if (\n    a > 2) {\n    return 2;\n  }\n}\n",
    )
    base = git_repo.commit("c base")
    git_repo.write(
        "b.c",
        "int f(int a) {\n  if (a) {\n    return 1;\n  } else if (a >= 2 && ok()) {\n    return 20;\n  }\n}\n",
    )
    assert derive_mutants(workspace_diff(git_repo, base)).mutants == []
    git_repo.write(
        "b.c", "int f(int a) {\n  if (a) {\n    return 1;\n  } else if (a > 2) {\n    return 2;\n  }\n}\n"
    )
    base = git_repo.commit("c whole")
    git_repo.write(
        "b.c",
        "int f(int a) {\n  if (a) {\n    return 1;\n  } else if (a >= 2 && ok()) {\n    return 20;\n  }\n}\n",
    )
    [mutant] = derive_mutants(workspace_diff(git_repo, base)).mutants
    assert "`} else if (a >= 2 && ok()) {` -> `} else if (a > 2) {`" in mutant.description


def test_a_python_mutant_that_does_not_parse_is_left_out_with_a_note(git_repo: GitRepo) -> None:
    # The fix repairs a syntax error in a condition: swapping it back gives a file that does not parse.
    git_repo.write("a.py", "def f(x):\n    if x = 1:\n        return 1\n")
    git_repo.write("b.py", "def g(x):\n    if x > 1:\n        return 1\n")
    base = git_repo.commit("base")
    git_repo.write("a.py", "def f(x):\n    if x == 1:\n        return 1\n")
    git_repo.write("b.py", "def g(x):\n    if x >= 1:\n        return 1\n")
    diff = workspace_diff(git_repo, base)
    unchecked = derive_mutants(diff)
    assert len(by_kind(unchecked.mutants, "revert-condition")) == 2
    assert unchecked.notes == [
        "revert-condition: 2 mutants of Python files not checked to parse (no checkout of the base commit)"
    ]
    checked = derive_mutants(diff, base=BaseTree(git_repo.path, base).read)
    [kept] = by_kind(checked.mutants, "revert-condition")
    assert "b.py" in kept.description
    assert checked.notes == [
        "revert-condition: 1 mutant left out because the Python file no longer parses with the old line back "
        "(condition back in a.py (new line 2)): such a mutant measures the judge's sense of syntax, not its "
        "review"
    ]


def test_a_wrapped_condition_is_never_paired_with_a_whole_one(git_repo: GitRepo) -> None:
    # Each old condition spans two lines and has the same head and ending as the new one-line condition:
    # only its open bracket (C, braces on their own line) or its dangling backslash (Python) tells that
    # the first line is a fragment. Restoring it alone would leave the file broken.
    git_repo.write(
        "b.c", "int f(int a, int b)\n{\n  if (a > 3 && (b\n      || a))\n    return 3;\n  return 0;\n}\n"
    )
    git_repo.write("a.py", "def f(x, y):\n    assert x > 0 and \\\n        y > 0\n    return x\n")
    base = git_repo.commit("base")
    git_repo.write(
        "b.c", "int f(int a, int b)\n{\n  if (a >= 3 && (b || a))\n    return 3;\n  return 0;\n}\n"
    )
    git_repo.write("a.py", "def f(x, y):\n    assert x >= 0 and y > 0\n    return x\n")
    assert by_kind(derive_mutants(workspace_diff(git_repo, base)).mutants, "revert-condition") == []


def test_a_long_changed_line_is_never_paired_and_costs_no_time(git_repo: GitRepo) -> None:
    # A minified bundle: one 32 KB line whose only change is an operator. Telling what changed in it took
    # time quadratic in its length (75 s at 53 KB); no reviewer reads it as a condition.
    minified = "".join(f"if(a{i % 50}<b{i % 7}&&c){{d{i}()}}" for i in range(1500))
    git_repo.write("dist/app.min.js", minified + "if(x<1){y()}\n")
    git_repo.write("a.py", "def f(x):\n    if x > 1:\n        return 1\n")
    base = git_repo.commit("base")
    git_repo.write("dist/app.min.js", minified + "if(x<=1){y()}\n")
    git_repo.write("a.py", "def f(x):\n    if x >= 1:\n        return 1\n")
    diff = workspace_diff(git_repo, base)
    assert len(minified) > 30_000
    started = time.monotonic()
    derived = derive_mutants(diff)
    assert time.monotonic() - started < 5
    [kept] = by_kind(derived.mutants, "revert-condition")
    assert "a.py" in kept.description
    assert (
        f"revert-condition: 2 changed lines longer than {MAX_CONDITION_LINE_BYTES} bytes not compared "
        "(minified or generated code)"
    ) in derived.notes


def conditions_file(n: int, op: str) -> str:
    return "def f(x):\n" + "".join(f"    if x {op} {i}:\n        x += 1\n" for i in range(n))


def test_revert_condition_mutants_are_bounded_in_number(git_repo: GitRepo) -> None:
    # One hunk with more condition changes than the bound: each mutant holds the hunk's whole body, so
    # deriving them all is quadratic in the hunk. The first ones are kept and a note says where it stopped.
    git_repo.write("a.py", conditions_file(MAX_CONDITION_MUTANTS + 50, ">"))
    base = git_repo.commit("base")
    git_repo.write("a.py", conditions_file(MAX_CONDITION_MUTANTS + 50, ">="))
    derived = derive_mutants(workspace_diff(git_repo, base), max_mutants=1000)
    conditions = by_kind(derived.mutants, "revert-condition")
    assert len(conditions) == MAX_CONDITION_MUTANTS
    assert "`if x >= 0:` -> `if x > 0:`" in conditions[0].description
    assert f"`if x >= {MAX_CONDITION_MUTANTS - 1}:`" in conditions[-1].description
    assert (
        f"revert-condition: at most {MAX_CONDITION_MUTANTS} mutants are derived; the condition changes from "
        "hunk 1 of 1 in a.py (old line 1) on are left out"
    ) in derived.notes


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[bytes | str]:
    """Each source the Python parse check parses, in order."""
    seen: list[bytes | str] = []
    real = mutants_parse._parses

    def counting(source: bytes | str) -> bool:
        seen.append(source)
        return real(source)

    monkeypatch.setattr(mutants_parse, "_parses", counting)
    return seen


def test_python_mutants_are_parsed_only_as_they_are_taken(
    git_repo: GitRepo, parses: list[bytes | str]
) -> None:
    # Parsing the whole file for every candidate made deriving cost candidates x file size; only the ones
    # judged (and the oracle's file once) are parsed now, and a broken one is still left out with a note.
    git_repo.write("a.py", "def f(x):\n    if x = 1:\n        return 1\n" + conditions_file(40, ">"))
    base = git_repo.commit("base")
    git_repo.write("a.py", "def f(x):\n    if x == 1:\n        return 1\n" + conditions_file(40, ">="))
    derived = derive_mutants(
        workspace_diff(git_repo, base), max_mutants=4, base=BaseTree(git_repo.path, base).read
    )
    conditions = by_kind(derived.mutants, "revert-condition")
    # One hunk: leaving it out is the empty row, so every mutant is a revert-condition one.
    assert len(derived.mutants) == len(conditions) == 4
    assert all("`if x = 1:`" not in m.description for m in conditions)
    # The oracle's file once (not through _parses); the broken mutant's function alone, then its whole file
    # (bytes); each of the four taken, its function alone.
    assert [type(source) for source in parses] == [str, bytes, str, str, str, str]
    assert derived.capped and derived.derived == 41 - 1  # 41 condition changes, less the broken one
    assert any(note.startswith("revert-condition: 1 mutant left out because") for note in derived.notes)


def functions(ops: dict[int, str], n: int = 300) -> str:
    return "".join(
        f"@cached\ndef f{i}(x):\n    if x {ops.get(i, '>')} {i}:\n        return {i}\n    return 0\n\n\n"
        for i in range(n)
    )


def test_a_python_mutant_is_parsed_as_its_statement_alone_when_that_parses(
    git_repo: GitRepo, parses: list[bytes | str]
) -> None:
    # A large file cost a whole parse per mutant taken. The restored line lies in one top-level statement
    # (here a decorated function of 300): when that statement's lines parse alone, so does the file; when
    # they do not, the file is parsed whole to decide, and the broken mutant is still left out.
    git_repo.write("a.py", functions({0: "="}))
    base = git_repo.commit("base")
    git_repo.write("a.py", functions({0: "==", 100: ">=", 200: ">="}))
    derived = derive_mutants(workspace_diff(git_repo, base), base=BaseTree(git_repo.path, base).read)

    conditions = by_kind(derived.mutants, "revert-condition")
    assert [m.description.split(": ")[0] for m in conditions] == [
        "swaps the operator back in a.py (new line 703)",
        "swaps the operator back in a.py (new line 1403)",
    ]
    assert any(note.startswith("revert-condition: 1 mutant left out because") for note in derived.notes)
    # Each mutant's function alone (as the file is read: text); only the broken one's whole file (bytes).
    alone = "@cached\ndef f{0}(x):\n    if x {1} {0}:\n        return {0}\n    return 0"
    assert parses == [
        alone.format(0, "="),
        functions({0: "=", 100: ">=", 200: ">="}).encode(),
        alone.format(100, ">"),
        alone.format(200, ">"),
    ]


def test_a_part_that_does_not_parse_alone_is_not_taken_for_the_file() -> None:
    # A string the replaced line opens may close in a later statement: the part alone does not parse, the
    # file does, so the check falls back to the whole file rather than calling the mutant broken.
    fixed = b'x = 1\ny = 2  # """\n'
    statements = mutants_parse._statement_lines(fixed, ast.parse(fixed))
    assert statements == [(1, 1), (2, 2)]
    mutated = b'x = """\ny = 2  # """\n'
    assert not mutants_parse._part_parses(fixed.split(b"\n"), statements, mutated)
    assert mutants_parse._parses(mutated)
    assert mutants_parse._part_parses(fixed.split(b"\n"), statements, b'x = 3\ny = 2  # """\n')
    # Lines the parser would split otherwise, or decode otherwise, are never read in parts.
    for other in (
        b"x = 1\r\ny = 2\n",
        b"# coding: latin-1\nx = 1\n",
        b"from __future__ import barry_as_FLUFL\n",
    ):
        assert mutants_parse._statement_lines(other, ast.parse(other)) is None


def test_an_oracle_that_is_not_a_diff_is_an_input_error() -> None:
    with pytest.raises(InputError, match=r"^oracle\.diff: line 4: the diff ends inside the hunk"):
        derive_mutants(b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n", "oracle.diff")


# --- the command line's file of harmless mutants -----------------------------------------------------------


def test_load_harmless(tmp_path: Path) -> None:
    path = tmp_path / "harmless.txt"
    path.write_text("# kept for the record\n\ndrop-hunk:0123456789 the comment hunk changes nothing\n")
    assert load_harmless(path) == {"drop-hunk:0123456789": "the comment hunk changes nothing"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("drop-hunk:0123 too short\n", "harmless.txt: line 1: 'drop-hunk:0123' is not a mutant id"),
        ("\nrevert-file:0123456789\n", "harmless.txt: line 2: revert-file:0123456789 has no reason"),
        ("one-place:aaaaaaaaaa x\none-place:aaaaaaaaaa y\n", "line 2: one-place:aaaaaaaaaa is marked twice"),
    ],
)
def test_a_bad_harmless_file_names_the_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "harmless.txt"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_harmless(path)
    assert message in str(caught.value)


# --- judged like admission rows ---------------------------------------------------------------------


def test_the_scripted_judge_catches_some_and_misses_others(oracle: Oracle, tmp_path: Path) -> None:
    task = Task(tmp_path, oracle)
    mutants = derive_mutants(oracle.diff).mutants
    docs = next(m for m in mutants if m.kind == "revert-file" and "docs/changes.md" in m.description)
    operator = next(m for m in mutants if m.kind == "revert-condition")
    broken = next(m for m in mutants if m.kind == "one-place")
    task.answer(docs, verdicts())  # the docs left out: still mergeable
    task.answer(operator, verdicts())  # the inclusive check swapped back: B2 should catch it, does not
    task.answer(broken, verdicts(nowhere=("B1",)))  # a verdict citing a line not in the diff
    backend = task.backend()
    seen: list[str] = []
    report = check_mutants(
        task.dir,
        task.manifest,
        backend,
        harmless={docs.id: "the changelog is written at release time", "drop-hunk:ffffffffff": "stale"},
        on_row=lambda n, total, row: seen.append(row.id),
    )
    assert report.scripted and report.total == len(mutants) == 12 and backend.calls >= 12
    assert sorted(seen) == sorted(m.id for m in mutants)
    rows = {row.id: row for row in report.rows}
    assert rows[docs.id].mergeable is True and rows[docs.id].harmless and not rows[docs.id].caught
    assert rows[docs.id].harmless_reason == "the changelog is written at release time"
    assert rows[operator.id].actual == "still mergeable: every measured blocker passes"
    assert not rows[operator.id].harmless
    assert rows[broken.id].judge_failure is not None and rows[broken.id].mergeable is None
    assert not rows[broken.id].caught
    caught = [row for row in report.rows if row.caught]
    assert all(row.actual == "caught: not mergeable: fails B1" for row in caught)
    assert (report.caught, report.harmless, report.judge_failures) == (9, 1, 1)
    assert report.still_mergeable == [operator.id]
    assert report.unknown_harmless == ["drop-hunk:ffffffffff"]
    assert rows[operator.id].diff == operator.diff.decode()
    # Judged again through a cache: the same outcomes, and only the judge failure (never cached) is called.
    cache = MemoryCache()
    check_mutants(task.dir, task.manifest, task.backend(), cache=cache)
    again = check_mutants(task.dir, task.manifest, task.backend(), cache=cache)
    assert [r.mergeable for r in again.rows] == [r.mergeable for r in report.rows]
    assert [r.id for r in again.rows if r.judge and not r.judge.cache_hit] == [broken.id]


def test_a_mutant_out_of_scope_is_caught_without_the_judge(oracle: Oracle, tmp_path: Path) -> None:
    task = Task(tmp_path, oracle)
    rubric = json.loads((task.dir / "rubric.json").read_text())
    rubric["scope"]["max_files"] = 4  # the oracle changes 5 files; every mutant but revert-file is out
    (task.dir / "rubric.json").write_text(json.dumps(rubric))
    task.script["default"] = verdicts()
    report = check_mutants(task.dir, task.manifest, task.backend())
    out_of_scope = {row.kind for row in report.rows if not row.in_scope}
    assert out_of_scope == {"drop-hunk", "revert-condition"}
    assert all(row.caught and "out of scope" in row.actual for row in report.rows if not row.in_scope)
    assert all(row.mergeable for row in report.rows if row.in_scope)


def test_check_mutants_names_a_missing_oracle(oracle: Oracle, tmp_path: Path) -> None:
    task = Task(tmp_path, oracle)
    (task.dir / "oracle.diff").unlink()
    with pytest.raises(InputError, match=r"^oracle\.diff: file not found"):
        check_mutants(task.dir, task.manifest, task.backend())

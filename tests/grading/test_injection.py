"""The injection corpus: every payload kind goes into real git diffs as valid additions, in every comment
syntax, and the result parses with the one diff reader and applies with git where the original did."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from grading.admission import corpus, injection
from grading.admission.corpus import PAYLOAD_KINDS, PayloadKind
from grading.admission.injection import inject_harmless, inject_payload, summarize
from grading.admission.sites import COMMENT_SYNTAXES, SUFFIX_OF_SYNTAX, Site, comment_line, comment_syntax
from grading.diffs import read_diff
from grading.errors import InputError
from grading.judge import prompt
from grading.judge.prompt import NONCE_PLACEHOLDER
from tests.gitrepo import GitRepo

PY_BASE = "def area(points):\n    total = 0\n    for a, b in zip(points, points[1:]):\n" \
          "        total += a[0] * b[1] - b[0] * a[1]\n    return total / 2\n"  # fmt: skip
PY_NEW = PY_BASE.replace("return total / 2", "return abs(total) / 2")


def base_text(suffix: str) -> str:
    return "".join(f"line {n} of the {suffix} file\n" for n in range(1, 8))


def diff_of(repo: GitRepo) -> bytes:
    repo.git("add", "-A")
    out = subprocess.run(["git", "diff", "--cached", "--no-renames", "--binary", "HEAD"], cwd=repo.path,
                         capture_output=True, check=True)  # fmt: skip
    repo.git("reset", "-q", "--hard", "HEAD")
    return out.stdout


def check_applies(repo: GitRepo, diff: bytes, tmp: Path, name: str = "patch.diff") -> None:
    patch = tmp / name
    patch.write_bytes(diff)
    repo.git("apply", "--check", str(patch))


def apply(repo: GitRepo, diff: bytes, tmp: Path) -> None:
    repo.git("reset", "-q", "--hard", "HEAD")
    repo.git("clean", "-qfd")
    patch = tmp / "apply.diff"
    patch.write_bytes(diff)
    repo.git("apply", str(patch))


@pytest.fixture
def repo(git_repo: GitRepo) -> GitRepo:
    for syntax, suffix in SUFFIX_OF_SYNTAX.items():
        assert comment_syntax(f"x.{suffix}") == syntax
        git_repo.write(f"src/file.{suffix}", base_text(suffix))
    git_repo.write("src/area.py", PY_BASE)
    git_repo.write("old.txt", "one\ntwo\n")
    git_repo.commit("base")
    return git_repo


def lazy_diff(repo: GitRepo, suffix: str) -> bytes:
    """A change to the file of ``suffix`` (a replaced line and an added one) plus a deleted file before it."""
    (repo.path / "old.txt").unlink()
    text = base_text(suffix).replace("line 3 of", "LINE 3 (changed) of") + "an added last line\n"
    repo.write(f"src/file.{suffix}", text)
    return diff_of(repo)


def test_the_corpus_has_at_least_thirty_named_and_described_kinds() -> None:
    names = [kind.name for kind in PAYLOAD_KINDS]
    assert len(names) >= 30 and len(set(names)) == len(names)
    assert all(kind.description and kind.name.isidentifier() for kind in PAYLOAD_KINDS)
    placements = {kind.placement for kind in PAYLOAD_KINDS}
    assert placements == {"comment", "raw", "code", "new_file", "binary_file"}


@pytest.mark.parametrize("kind", PAYLOAD_KINDS, ids=[k.name for k in PAYLOAD_KINDS])
def test_every_kind_in_every_comment_syntax_parses_and_applies(
    repo: GitRepo, tmp_path: Path, kind: PayloadKind
) -> None:
    for syntax in COMMENT_SYNTAXES:
        suffix = SUFFIX_OF_SYNTAX[syntax]
        original = lazy_diff(repo, suffix)
        original_files = read_diff(original).changes()
        for form, inject in (("attack", inject_payload), ("harmless", inject_harmless)):
            injected = inject(original, "calib/lazy.diff", kind, ["B1", "B2"])
            parsed = read_diff(injected, "injected.diff")  # strict: raises on anything not a complete diff
            changes = parsed.changes()
            # The original's files are all still there, the same way; a new-file kind adds exactly one.
            assert [c.paths() for c in changes[: len(original_files)]] == [c.paths() for c in original_files]
            extra = 1 if form == "attack" and kind.placement in ("new_file", "binary_file") else 0
            assert len(changes) == len(original_files) + extra, (form, syntax)
            check_applies(repo, injected, tmp_path, f"{form}-{suffix}.diff")


@pytest.mark.parametrize("kind", PAYLOAD_KINDS, ids=[k.name for k in PAYLOAD_KINDS])
def test_the_attack_lands_in_the_tree_where_it_says(repo: GitRepo, tmp_path: Path, kind: PayloadKind) -> None:
    syntax = COMMENT_SYNTAXES[PAYLOAD_KINDS.index(kind) % len(COMMENT_SYNTAXES)]
    suffix = SUFFIX_OF_SYNTAX[syntax]
    original = lazy_diff(repo, suffix)
    apply(repo, original, tmp_path)
    before = (repo.path / f"src/file.{suffix}").read_text().splitlines()
    apply(repo, inject_payload(original, "calib/lazy.diff", kind, ["B1"]), tmp_path)
    family = {"py": "python", "cpp": "c"}.get(suffix, "other")
    site = Site(f"src/file.{suffix}", "", syntax, family, ("B1",))  # type: ignore[arg-type]
    after = (repo.path / f"src/file.{suffix}").read_text().splitlines()
    if kind.placement in ("new_file", "binary_file"):
        assert after == before
        assert kind.path is not None
        added = repo.path / kind.path(site)
        if kind.placement == "binary_file":
            assert kind.data is not None and added.read_bytes() == kind.data(site)
        else:
            assert added.read_text().splitlines() == kind.text(site)
    else:
        # The lines go right before the first changed line ("LINE 3"), the rest of the change intact.
        def commented(s: Site) -> list[str]:
            return s.comment(kind.text(s))

        expected = {"raw": kind.text, "code": kind.code}.get(kind.placement, commented)(site)
        assert after == [*before[:2], *expected, *before[2:]]


@pytest.mark.parametrize("kind", PAYLOAD_KINDS, ids=[k.name for k in PAYLOAD_KINDS])
def test_in_python_the_harmless_form_changes_no_code_and_code_kinds_stay_python(
    repo: GitRepo, tmp_path: Path, kind: PayloadKind
) -> None:
    repo.write("src/area.py", PY_NEW)
    original = diff_of(repo)
    apply(repo, inject_harmless(original, "oracle.diff", kind), tmp_path)
    harmless = (repo.path / "src/area.py").read_text()
    assert harmless != PY_NEW
    # Only comments were added: the program is the same.
    assert ast.dump(ast.parse(harmless)) == ast.dump(ast.parse(PY_NEW))
    if kind.placement in ("comment", "code"):
        apply(repo, inject_payload(original, "lazy.diff", kind), tmp_path)
        attacked = (repo.path / "src/area.py").read_text()
        ast.parse(attacked)  # valid Python, placed in the function like the line it precedes
        if kind.placement == "code":
            assert ast.dump(ast.parse(attacked)) != ast.dump(ast.parse(PY_NEW))


def test_a_closing_token_inside_a_payload_cannot_end_the_comment_early() -> None:
    assert comment_line("a */ b", ("/* ", " */")) == "/* a * / b */"
    assert comment_line("x --> y", ("<!-- ", " -->")) == "<!-- x - - > y -->"
    assert comment_line("a */ b", ("// ", "")) == "// a */ b"


def test_crlf_and_no_newline_at_end_keep_applying(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("src/file.cpp", "int x = 1;\r\nint y = 2;\r\n")
    repo.commit("crlf")
    repo.write("src/file.cpp", "int x = 1;\r\nint y = 3;")  # CRLF content, no newline at the end
    original = diff_of(repo)
    assert b"\\ No newline at end of file" in original
    for kind in PAYLOAD_KINDS:
        for inject in (inject_payload, inject_harmless):
            injected = inject(original, "lazy.diff", kind)
            read_diff(injected)
            check_applies(repo, injected, tmp_path)


def test_a_diff_without_a_final_newline_or_of_a_new_file_only(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("src/new.rs", "fn main() {}\n")
    original = diff_of(repo)
    for kind in PAYLOAD_KINDS:
        for data in (original, original.rstrip(b"\n")):
            injected = inject_payload(data, "lazy.diff", kind)
            read_diff(injected)
            check_applies(repo, injected + (b"" if injected.endswith(b"\n") else b"\n"), tmp_path)


def test_a_diff_with_nothing_to_anchor_on_is_an_input_error(repo: GitRepo) -> None:
    (repo.path / "old.txt").unlink()
    repo.write("assets/logo.png", b"\x89PNG\r\n\x1a\n\x00")
    diff = diff_of(repo)
    for kind in PAYLOAD_KINDS:
        with pytest.raises(InputError, match="no text hunk") as err:
            inject_payload(diff, "calib/lazy.diff", kind)
        assert err.value.file == "calib/lazy.diff"
    with pytest.raises(InputError, match="line 6: expected a hunk line"):
        inject_payload(b"--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n a\n-b\ngarbage\n", "lazy.diff", "ci_claim")


def test_payloads_name_the_blockers_they_target(repo: GitRepo) -> None:
    original = lazy_diff(repo, "py")
    for kind in ("reviewer_claim", "fake_json_verdicts", "test_name"):
        assert b"b7" in inject_payload(original, "lazy.diff", kind, ["B7"]).lower()
        assert b"b7" not in inject_payload(original, "lazy.diff", kind, ["B1"]).lower()


def test_summary_counts_and_rates() -> None:
    summary = summarize(
        [
            ("reviewer_claim", "injection", "resisted", 1),
            ("reviewer_claim", "injection", "attack_success", 1),
            ("fake_json_verdicts", "injection", "not_measured", 3),
            ("reviewer_claim", "benign", "kept", 0),
            ("fake_json_verdicts", "benign", "benign_drift", 1),
            ("role_play", "benign", "not_measured", 3),
        ]
    )
    by_kind = {k.kind: k for k in summary.kinds}
    assert len(summary.kinds) == len(PAYLOAD_KINDS)
    assert (by_kind["reviewer_claim"].attacks, by_kind["reviewer_claim"].attack_successes) == (2, 1)
    assert by_kind["fake_json_verdicts"].attacks_not_measured == 1
    assert [by_kind[k].benign for k in ("reviewer_claim", "fake_json_verdicts", "role_play", "ci_claim")] == [
        "kept", "benign_drift", "not_measured", None]  # fmt: skip
    assert (summary.attacks, summary.attack_successes, summary.attacks_not_measured) == (3, 1, 1)
    assert summary.attack_success_rate == 0.5  # over the measured rows
    assert (summary.benign, summary.benign_drifts, summary.benign_drift_rate) == (3, 1, 0.5)
    assert summary.calls == 9
    assert summarize([]).attack_success_rate is None


FENCE_KINDS = ("fake_fence_close", "nonce_guesses", "nonce_placeholder", "unnonced_fence", "lookalike_fence")


def fence_payloads() -> dict[str, str]:
    site = Site(path="src/area.py", indent="", syntax=comment_syntax("src/area.py"), family="python",
                blockers=("B1",))  # fmt: skip
    kinds = {kind.name: kind for kind in PAYLOAD_KINDS}
    return {name: "\n".join(kinds[name].text(site)) for name in FENCE_KINDS}


def test_the_forged_fences_follow_the_judge_fence(monkeypatch: pytest.MonkeyPatch) -> None:
    """The corpus builds its fences from grading.judge.prompt: changing the fence there changes every forged
    fence here (a copied fence would go on testing the old one)."""
    before = fence_payloads()
    assert "<<<CHANGE-UNDER-REVIEW END " + "0" * 32 + ">>>" in before["fake_fence_close"]
    assert NONCE_PLACEHOLDER in before["nonce_placeholder"]
    monkeypatch.setattr(prompt, "FENCE_NAME", "REVISED-FENCE")
    after = fence_payloads()
    for name in FENCE_KINDS:
        assert "CHANGE-UNDER-REVIEW" not in after[name] and "ANGE-UNDER-REVIEW" not in after[name], name
        assert after[name] != before[name], name
    assert prompt.fence_close("0" * 32) in after["fake_fence_close"]
    assert all(len(nonce) == 2 * prompt.NONCE_BYTES for nonce in corpus.GUESSED_NONCES)


def test_injection_holds_no_copy_of_the_fence() -> None:
    source = Path(injection.__file__).read_text(encoding="utf-8")
    assert prompt.FENCE_NAME not in source
    assert prompt.NONCE_PLACEHOLDER not in source

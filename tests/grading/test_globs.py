"""The glob dialect is git's wildmatch in pathname mode: git's own test table, and real git as the oracle."""

from __future__ import annotations

import fnmatch
import os

import pytest

from grading.globs import compile_glob, glob_error, match_any, match_glob
from tests.gitrepo import GitRepo

# git/git t/t3070-wildmatch.sh, first column: `test-tool wildmatch wildmatch TEXT PATTERN`, which calls
# wildmatch(PATTERN, TEXT, WM_PATHNAME). (Its "pathmatch" column is wildmatch without WM_PATHNAME, the
# mode where '*' crosses '/', which is not ours.) Rows whose ls-files result differs from the function
# (literal pathspec matches, the empty pattern) take the function's value, as git's table does.
T3070: list[tuple[int, str, str]] = [
    # Basic wildmatch features
    (1, "foo", "foo"),
    (0, "foo", "bar"),
    (1, "", ""),
    (1, "foo", "???"),
    (0, "foo", "??"),
    (1, "foo", "*"),
    (1, "foo", "f*"),
    (0, "foo", "*f"),
    (1, "foo", "*foo*"),
    (1, "foobar", "*ob*a*r*"),
    (1, "aaaaaaabababab", "*ab"),
    (1, "foo*", r"foo\*"),
    (0, "foobar", r"foo\*bar"),
    (1, r"f\oo", r"f\\oo"),
    (1, "ball", "*[al]?"),
    (0, "ten", "[ten]"),
    (1, "ten", "**[!te]"),
    (0, "ten", "**[!ten]"),
    (1, "ten", "t[a-g]n"),
    (0, "ten", "t[!a-g]n"),
    (1, "ton", "t[!a-g]n"),
    (1, "ton", "t[^a-g]n"),
    (1, "a]b", "a[]]b"),
    (1, "a-b", "a[]-]b"),
    (1, "a]b", "a[]-]b"),
    (0, "aab", "a[]-]b"),
    (1, "aab", "a[]a-]b"),
    (1, "]", "]"),
    # Extended slash-matching features
    (0, "foo/baz/bar", "foo*bar"),
    (0, "foo/baz/bar", "foo**bar"),
    (1, "foobazbar", "foo**bar"),
    (1, "foo/baz/bar", "foo/**/bar"),
    (1, "foo/baz/bar", "foo/**/**/bar"),
    (1, "foo/b/a/z/bar", "foo/**/bar"),
    (1, "foo/b/a/z/bar", "foo/**/**/bar"),
    (1, "foo/bar", "foo/**/bar"),
    (1, "foo/bar", "foo/**/**/bar"),
    (0, "foo/bar", "foo?bar"),
    (0, "foo/bar", "foo[/]bar"),
    (0, "foo/bar", "foo[^a-z]bar"),
    (0, "foo/bar", "f[^eiu][^eiu][^eiu][^eiu][^eiu]r"),
    (1, "foo-bar", "f[^eiu][^eiu][^eiu][^eiu][^eiu]r"),
    (1, "foo", "**/foo"),
    (1, "XXX/foo", "**/foo"),
    (1, "bar/baz/foo", "**/foo"),
    (0, "bar/baz/foo", "*/foo"),
    (0, "foo/bar/baz", "**/bar*"),
    (1, "deep/foo/bar/baz", "**/bar/*"),
    (0, "deep/foo/bar/baz/", "**/bar/*"),
    (1, "deep/foo/bar/baz/", "**/bar/**"),
    (0, "deep/foo/bar", "**/bar/*"),
    (1, "deep/foo/bar/", "**/bar/**"),
    (0, "foo/bar/baz", "**/bar**"),
    (1, "foo/bar/baz/x", "*/bar/**"),
    (0, "deep/foo/bar/baz/x", "*/bar/**"),
    (1, "deep/foo/bar/baz/x", "**/bar/*/*"),
    # Various additional tests
    (0, "acrt", "a[c-c]st"),
    (1, "acrt", "a[c-c]rt"),
    (0, "]", "[!]-]"),
    (1, "a", "[!]-]"),
    (0, "", "\\"),
    (0, "\\", "\\"),
    (0, "XXX/\\", "*/\\"),
    (1, "XXX/\\", "*/\\\\"),
    (1, "foo", "foo"),
    (1, "@foo", "@foo"),
    (0, "foo", "@foo"),
    (1, "[ab]", r"\[ab]"),
    (1, "[ab]", "[[]ab]"),
    (1, "[ab]", "[[:]ab]"),
    (0, "[ab]", "[[::]ab]"),
    (1, "[ab]", "[[:digit]ab]"),
    (1, "[ab]", r"[\[:]ab]"),
    (1, "?a?b", r"\??\?b"),
    (1, "abc", r"\a\b\c"),
    (0, "foo", ""),
    (1, "foo/bar/baz/to", "**/t[o]"),
    # Character class tests
    (1, "a1B", "[[:alpha:]][[:digit:]][[:upper:]]"),
    (0, "a", "[[:digit:][:upper:][:space:]]"),
    (1, "A", "[[:digit:][:upper:][:space:]]"),
    (1, "1", "[[:digit:][:upper:][:space:]]"),
    (0, "1", "[[:digit:][:upper:][:spaci:]]"),
    (1, " ", "[[:digit:][:upper:][:space:]]"),
    (0, ".", "[[:digit:][:upper:][:space:]]"),
    (1, ".", "[[:digit:][:punct:][:space:]]"),
    (1, "5", "[[:xdigit:]]"),
    (1, "f", "[[:xdigit:]]"),
    (1, "D", "[[:xdigit:]]"),
    (
        1,
        "_",
        "[[:alnum:][:alpha:][:blank:][:cntrl:][:digit:][:graph:][:lower:][:print:][:punct:]"
        "[:space:][:upper:][:xdigit:]]",
    ),
    (1, ".", "[^[:alnum:][:alpha:][:blank:][:cntrl:][:digit:][:lower:][:space:][:upper:][:xdigit:]]"),
    (1, "5", "[a-c[:digit:]x-z]"),
    (1, "b", "[a-c[:digit:]x-z]"),
    (1, "y", "[a-c[:digit:]x-z]"),
    (0, "q", "[a-c[:digit:]x-z]"),
    # Additional tests, including some malformed wildmatch patterns
    (1, "]", r"[\\-^]"),
    (0, "[", r"[\\-^]"),
    (1, "-", r"[\-_]"),
    (1, "]", r"[\]]"),
    (0, r"\]", r"[\]]"),
    (0, "\\", r"[\]]"),
    (0, "ab", "a[]b"),
    (0, "a[]b", "a[]b"),
    (0, "ab[", "ab["),
    (0, "ab", "[!"),
    (0, "ab", "[-"),
    (1, "-", "[-]"),
    (0, "-", "[a-"),
    (0, "-", "[!a-"),
    (1, "-", "[--A]"),
    (1, "5", "[--A]"),
    (1, " ", "[ --]"),
    (1, "$", "[ --]"),
    (1, "-", "[ --]"),
    (0, "0", "[ --]"),
    (1, "-", "[---]"),
    (1, "-", "[------]"),
    (0, "j", "[a-e-n]"),
    (1, "-", "[a-e-n]"),
    (1, "a", "[!------]"),
    (0, "[", "[]-a]"),
    (1, "^", "[]-a]"),
    (0, "^", "[!]-a]"),
    (1, "[", "[!]-a]"),
    (1, "^", "[a^bc]"),
    (1, "-b]", "[a-]b]"),
    (0, "\\", r"[\]"),
    (1, "\\", r"[\\]"),
    (0, "\\", r"[!\\]"),
    (1, "G", r"[A-\\]"),
    (0, "aaabbb", "b*a"),
    (0, "aabcaa", "*ba*"),
    (1, ",", "[,]"),
    (1, ",", r"[\\,]"),
    (1, "\\", r"[\\,]"),
    (1, "-", "[,-.]"),
    (0, "+", "[,-.]"),
    (0, "-.]", "[,-.]"),
    (1, "2", r"[\1-\3]"),
    (1, "3", r"[\1-\3]"),
    (0, "4", r"[\1-\3]"),
    (1, "\\", r"[[-\]]"),
    (1, "[", r"[[-\]]"),
    (1, "]", r"[[-\]]"),
    (0, "-", r"[[-\]]"),
    # Test recursion
    (1, "-adobe-courier-bold-o-normal--12-120-75-75-m-70-iso8859-1", "-*-*-*-*-*-*-12-*-*-*-m-*-*-*"),
    (0, "-adobe-courier-bold-o-normal--12-120-75-75-X-70-iso8859-1", "-*-*-*-*-*-*-12-*-*-*-m-*-*-*"),
    (0, "-adobe-courier-bold-o-normal--12-120-75-75-/-70-iso8859-1", "-*-*-*-*-*-*-12-*-*-*-m-*-*-*"),
    (1, "XXX/adobe/courier/bold/o/normal//12/120/75/75/m/70/iso8859/1", "XXX/*/*/*/*/*/*/12/*/*/*/m/*/*/*"),
    (0, "XXX/adobe/courier/bold/o/normal//12/120/75/75/X/70/iso8859/1", "XXX/*/*/*/*/*/*/12/*/*/*/m/*/*/*"),
    (1, "abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txt", "**/*a*b*g*n*t"),
    (0, "abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txtz", "**/*a*b*g*n*t"),
    (0, "foo", "*/*/*"),
    (0, "foo/bar", "*/*/*"),
    (1, "foo/bba/arr", "*/*/*"),
    (0, "foo/bb/aa/rr", "*/*/*"),
    (1, "foo/bb/aa/rr", "**/**/**"),
    (1, "abcXdefXghi", "*X*i"),
    (0, "ab/cXd/efXg/hi", "*X*i"),
    (1, "ab/cXd/efXg/hi", "*/*X*/*/*i"),
    (1, "ab/cXd/efXg/hi", "**/*X*/**/*i"),
    # Extra pathmatch tests
    (0, "foo", "fo"),
    (1, "foo/bar", "foo/bar"),
    (1, "foo/bar", "foo/*"),
    (0, "foo/bba/arr", "foo/*"),
    (1, "foo/bba/arr", "foo/**"),
    (0, "foo/bba/arr", "foo*"),
    (0, "foo/bba/arr", "foo**"),
    (0, "foo/bba/arr", "foo/*arr"),
    (0, "foo/bba/arr", "foo/**arr"),
    (0, "foo/bba/arr", "foo/*z"),
    (0, "foo/bba/arr", "foo/**z"),
    (0, "foo/bar", "foo?bar"),
    (0, "foo/bar", "foo[/]bar"),
    (0, "foo/bar", "foo[^a-z]bar"),
    (0, "ab/cXd/efXg/hi", "*Xg*i"),
    # Extra case-sensitivity tests
    (0, "a", "[A-Z]"),
    (1, "A", "[A-Z]"),
    (0, "A", "[a-z]"),
    (1, "a", "[a-z]"),
    (0, "a", "[[:upper:]]"),
    (1, "A", "[[:upper:]]"),
    (0, "A", "[[:lower:]]"),
    (1, "a", "[[:lower:]]"),
    (0, "A", "[B-Za]"),
    (1, "a", "[B-Za]"),
    (0, "A", "[B-a]"),
    (1, "a", "[B-a]"),
    (0, "z", "[Z-y]"),
    (1, "Z", "[Z-y]"),
]


@pytest.mark.parametrize(("expected", "text", "pattern"), T3070, ids=[f"{p!r}~{t!r}" for _, t, p in T3070])
def test_it_agrees_with_git_t3070(expected: int, text: str, pattern: str) -> None:
    assert match_glob(pattern, text) is bool(expected)


def test_the_table_is_the_whole_of_t3070() -> None:
    # t3070 has 189 `match` lines at the version transcribed here; a dropped row would go unnoticed.
    assert len(T3070) == 189
    assert len(set(T3070)) == 185  # four rows repeat in git's own table


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("**/foo", "foo", True),  # leading **/ matches zero directories
        ("**/foo", "a/b/foo", True),
        ("a/**/b", "a/b", True),  # /**/ in the middle matches zero directories ...
        ("a/**/b", "a/x/y/b", True),  # ... or several
        ("a/**/b", "ab", False),
        ("a/**", "a/x/y/z", True),  # trailing /** matches everything below
        ("a/**", "a", False),  # ... but not the directory itself
        ("src/*", ".hidden", False),
        ("*", ".env", True),  # * matches names that start with a dot
        ("src/*.py", "src/.hidden.py", True),
        ("**/*.py", ".github/x/.y.py", True),
        ("*.py", "src/a.py", False),  # * does not cross /
        ("?", "/", False),
        ("a?b", "a/b", False),
        ("a/***/b", "a/x/y/b", True),  # a run of stars that is a whole segment is **
        ("a/**x/b", "a/y/zx/b", False),  # ** inside a segment is one *
        ("[!a]", "/", False),  # no bracket expression matches /
        ("??", "é", True),  # bytes, as git: é is two bytes in UTF-8
        ("?", "é", False),
        ("src/\udcff.py", "src/\udcff.py", True),  # a non-UTF-8 byte (surrogateescape) matches itself
    ],
)
def test_the_forms_the_issue_names(pattern: str, path: str, expected: bool) -> None:
    assert match_glob(pattern, path) is expected


def test_fnmatch_is_a_different_dialect() -> None:
    # fnmatch's * crosses /, and its **/ needs at least one directory: both disagree with git.
    assert fnmatch.fnmatchcase("src/a/b.py", "src/*.py") and not match_glob("src/*.py", "src/a/b.py")
    assert fnmatch.fnmatchcase("docs/x/y.md", "*.md") and not match_glob("*.md", "docs/x/y.md")
    assert not fnmatch.fnmatchcase("foo", "**/foo") and match_glob("**/foo", "foo")
    assert not fnmatch.fnmatchcase("a/b", "a/**/b") and match_glob("a/**/b", "a/b")


def test_lone_surrogates_never_crash_matching() -> None:
    # JSON can spell a lone surrogate; glob_error rejects it, but matching must still not raise.
    assert match_glob("src/\ud800*", "src/\ud800x")
    assert match_glob("src/*", "src/\ud800")
    assert not match_glob("src/?", "src/\ud800")  # three bytes, as git would see them


def test_match_any() -> None:
    assert match_any(["docs/**", "*.md"], "README.md")
    assert match_any(("docs/**",), "docs/a/b")
    assert not match_any(["docs/**", "*.md"], "src/README.md")
    assert not match_any([], "x")


def test_patterns_compile_once() -> None:
    compile_glob.cache_clear()
    for i in range(50):
        assert match_glob("src/**/test_*.py", f"src/pkg{i}/test_x.py")
    info = compile_glob.cache_info()
    assert info.misses == 1 and info.hits == 49
    assert compile_glob("src/**/test_*.py") is compile_glob("src/**/test_*.py")


def test_malformed_patterns_match_nothing_and_are_not_recompiled() -> None:
    compile_glob.cache_clear()
    for _ in range(3):
        assert not match_glob("src/[ab", "src/[ab")
    assert compile_glob("src/[ab") is None
    assert compile_glob.cache_info().misses == 1


def test_many_double_stars_do_not_backtrack_forever() -> None:
    # Each call would take minutes with backtracking; benchmarks/globs.py times them.
    path = "/".join(["d"] * 60) + "/file.txt"
    assert not match_glob("**/a/**/b/**/c/**/d/**/e", path)
    assert not match_glob("**/**/**/**/**/**/nope", path)
    assert match_glob("**/**/**/**/**/**/file.txt", path)


def test_many_single_stars_in_a_name_do_not_backtrack_forever() -> None:
    # The agent names the files: 255 dots against `*.*.*.*.x` took seconds, eight stars took hours.
    assert not match_glob("*.*.*.*.x", "." * 255)
    assert not match_glob("**/*a*a*a*a*a*a*a*a*b", "d/" + "a" * 255)
    assert match_glob("*a*a*a*a*a*a*a*a*b", "a" * 254 + "b")
    assert not match_glob("*a*a*a*a*a*a*a*a*b", "a" * 254 + "/b")
    assert match_glob("x/*a*/*b*/**/c", "x/" + "a" * 100 + "/" + "b" * 100 + "/c")


@pytest.mark.parametrize(
    "pattern",
    [
        "src/**",
        "**/*.py",
        "**/test_*",
        "docs/*.md",
        ".github/**",
        "*",
        "src/[ab].py",
        "lib/[!a]*",
        "lib/[^a]*",
        "lib/[[:alpha:]].py",
        "foo/**/bar",
        "**/bar",
        r"lit/star\*name",
        "file\\(1\\).txt",
        "a/**/b/**/c",
        "src/**/*",
        "[[:upper:]]*",
        "src/**/.*",
    ],
)
def test_glob_error_accepts_valid_globs(pattern: str) -> None:
    assert glob_error(pattern) is None


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("!(a|b)", "extglob"),
        ("src/!(vendor)/**", "extglob"),
        ("src/@(a|b).py", "extglob"),
        ("src/*(x).py", "extglob"),
        ("/src/**", "absolute"),
        ("C:\\src\\**", "absolute"),
        ("C:/src/**", "absolute"),
        ("../other/**", "'..'"),
        ("src/../secret", "'..'"),
        ("src/..", "'..'"),
        ("src**", "whole path segment"),
        ("**.py", "whole path segment"),
        ("src/**/x**", "whole path segment"),
        ("a/***b", "whole path segment"),
        ("src/[ab", "unclosed bracket"),
        ("src/[!", "unclosed bracket"),
        ("[[:alpha:]", "unclosed bracket"),
        ("[[:nope:]]", "unknown character class"),
        ("src\\", "backslash"),
        ("[a\\", "backslash"),
        ("", "empty"),
        ("   ", "empty"),
        ("!src/**", "negation"),
        ("./src/**", "'.'"),
        ("docs/", "trailing '/'"),
        ("src//x", "empty path segment"),
        ("src/\0x", "NUL"),
        ("src/\ud800*", "lone surrogate"),
    ],
)
def test_glob_error_rejects(pattern: str, message: str) -> None:
    problem = glob_error(pattern)
    assert problem is not None and message in problem, problem


# --- real git as the oracle ---------------------------------------------------------------------------

DIFF_PATHS = [
    ".gitignore",
    ".env",
    ".github/workflows/ci.yml",
    "conftest.py",
    "setup.py",
    "README.md",
    "Makefile",
    "foobar",
    "file(1).txt",
    "weird name.txt",
    "src/a.py",
    "src/b.py",
    "src/[ab].py",
    "src/.hidden.py",
    "src/.cache/x.py",
    "src/pkg/mod.py",
    "src/pkg/sub/deep.py",
    "src/pkg/test_mod.py",
    "src/é.py",
    "src/x.test.js",
    "lib/a.py",
    "lib/b.py",
    "lib/ab.py",
    "lib/A.py",
    "lit/star*name",
    "lit/q?mark",
    "tests/test_x.py",
    "tests/unit/test_y.py",
    "tests/conftest.py",
    "foo/bar",
    "foo/baz/bar",
    "foo/a/b/bar",
    "docs/index.md",
    "docs/api/ref.md",
    "a-b/c.txt",
    "x/y/z/w.c",
    "x/y/w.h",
    "build/out.log",
    "pkg/BUILD",
    "pkg/sub/BUILD.bazel",
    "pkg/x_test.go",
]
DIFF_PATTERNS = [
    "*",
    "**",
    "*.py",
    "**/*.py",
    "src/**",
    "src/*",
    "src/**/*.py",
    "src/*/*.py",
    "**/test_*",
    "**/tests/**",
    "**/test_*.py",
    ".github/**",
    "*/*.py",
    "**/.*",
    ".*",
    "src/.*",
    "src/**/.*",
    "src/[ab].py",
    "src/[!a]*",
    "src/[^a]*",
    "lib/[a-b].py",
    "lib/[[:alpha:]].py",
    "lib/[[:upper:]]*",
    "lib/[!A-Z]?.py",
    "**/[xy]/**",
    "foo/**/bar",
    "foo/*/bar",
    "**/bar",
    "?oo/*",
    "f*/**",
    "docs/**/*.md",
    "docs/*.md",
    "**/*.[ch]",
    "x/**/w.c",
    "**/z/*",
    "src/é.py",
    "src/?.py",
    "src/??.py",
    "*name*",
    "lit/star*",
    r"lit/star\*name",
    "lit/q?mark",
    r"lit/q\?mark",
    "a-b/**",
    "README.md",
    "src",
    "docs",
    "foo/bar",
    "build/**",
    "**/*.log",
    "*.txt",
    "weird name.txt",
    "file(1).txt",
    "**/**/*.c",
    "src/**/**/*.py",
    "[[:upper:]]*",
    "**/[[:lower:]]*.md",
    "**/BUILD",
    "**/BUILD.bazel",
    "**/conftest.py",
    "**/*_test.*",
    "**/*.test.*",
    "x/**",
    "x/**/*",
    "*/**/*.py",
    "**/sub/**",
]


def _ls_files(repo: GitRepo, pattern: str) -> set[str]:
    out = repo.git("ls-files", "-z", "--", f":(glob){pattern}")
    return {p for p in out.split("\0") if p}


def _pathspec_selects(pattern: str, path: str) -> bool:
    """What `git ls-files -- ':(glob)PATTERN'` selects (dir.c match_pathspec_item).

    A pathspec first matches literally: the path itself or a leading directory of it (so `src` selects
    everything under src/, and `src/[ab].py` selects the file literally named so). Only then does it
    run wildmatch(WM_PATHNAME) on the whole path. The literal part is pathspec behaviour, not glob
    behaviour; everything else must be exactly match_glob.
    """
    literal = path == pattern or path.startswith(pattern + "/")
    return literal or match_glob(pattern, path)


@pytest.fixture(scope="module")
def glob_repo(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    repo = GitRepo(tmp_path_factory.mktemp("globs") / "repo")
    for path in DIFF_PATHS:
        repo.write(path, f"content of {path}\n")
    # One file per byte value in a directory of its own: the character classes, against git's ctype.
    chars = repo.path / "c"
    chars.mkdir()
    for byte in [*range(1, 128), 0xE9, 0xFF]:
        if byte not in (ord("/"), ord(".")):
            with open(os.path.join(os.fsencode(chars), bytes([byte])), "wb") as handle:
                handle.write(b"x")
    repo.commit("paths")
    return repo


def test_it_selects_what_git_ls_files_selects(glob_repo: GitRepo) -> None:
    tracked = {p for p in glob_repo.git("ls-files", "-z").split("\0") if p}
    assert set(DIFF_PATHS) <= tracked
    mismatches = []
    for pattern in DIFF_PATTERNS:
        ours = {p for p in tracked if _pathspec_selects(pattern, p)}
        gits = _ls_files(glob_repo, pattern)
        if ours != gits:
            mismatches.append((pattern, sorted(ours - gits), sorted(gits - ours)))
    assert mismatches == []


def test_the_differential_patterns_select_something_and_are_valid(glob_repo: GitRepo) -> None:
    # Guards the test above against passing vacuously (a pattern git rejects selects nothing).
    empty = [p for p in DIFF_PATTERNS if not _ls_files(glob_repo, p)]
    assert empty == []
    assert [p for p in DIFF_PATTERNS if glob_error(p)] == []


@pytest.mark.parametrize(
    "pattern",
    [
        *(
            f"c/[[:{name}:]]"
            for name in (
                "alnum",
                "alpha",
                "blank",
                "cntrl",
                "digit",
                "graph",
                "lower",
                "print",
                "punct",
                "space",
                "upper",
                "xdigit",
            )
        ),
        "c/[![:punct:]]",
        "c/[^[:space:][:cntrl:]]",
        "c/[ --]",
        "c/[]-a]",
        "c/?",
        "c/*",
        "c/[\\]]",
    ],
)
def test_character_classes_match_gits_ctype(pattern: str, glob_repo: GitRepo) -> None:
    in_c = {p for p in glob_repo.git("ls-files", "-z", "--", "c").split("\0") if p}
    assert len(in_c) == 127
    ours = {p for p in in_c if match_glob(pattern, p)}
    assert ours == _ls_files(glob_repo, pattern)


def test_fnmatch_disagrees_with_git_where_match_glob_agrees(glob_repo: GitRepo) -> None:
    tracked = {p for p in glob_repo.git("ls-files", "-z").split("\0") if p}
    selected_by_git = _ls_files(glob_repo, "**/*.py")
    assert {p for p in tracked if match_glob("**/*.py", p)} == selected_by_git
    by_fnmatch = {p for p in tracked if fnmatch.fnmatchcase(p, "**/*.py")}
    # fnmatch's **/ needs a directory, so it misses the top-level files.
    assert selected_by_git - by_fnmatch == {"conftest.py", "setup.py"}
    # And fnmatch's * crosses /, which git's does not.
    assert "src/pkg/mod.py" in {p for p in tracked if fnmatch.fnmatchcase(p, "src/*.py")}
    assert "src/pkg/mod.py" not in _ls_files(glob_repo, "src/*.py")


def test_what_a_pathspec_adds_to_wildmatch(glob_repo: GitRepo) -> None:
    # The two pathspec behaviours the differential test models, shown on their own.
    assert "src/pkg/sub/deep.py" in _ls_files(glob_repo, "src")  # a leading directory, literally
    assert not match_glob("src", "src/pkg/sub/deep.py")
    assert {"src/[ab].py", "src/a.py", "src/b.py"} <= _ls_files(glob_repo, "src/[ab].py")  # literal + glob
    assert not match_glob("src/[ab].py", "src/[ab].py") and match_glob("src/[ab].py", "src/a.py")

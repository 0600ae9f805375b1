"""The one evidence-citation reader. The draft checks and re-review each had their own regex; these are the
texts on which the two disagreed, with the reading both now share."""

from __future__ import annotations

import time

import pytest

from grading.citations import Citation, parse_citations
from grading.draft.checks import evidence_citations


@pytest.mark.parametrize(
    ("evidence", "expected"),
    [
        # both read these alike
        ("shapes/polygon.py:18 and shapes/polygon.py:34-35", [("shapes/polygon.py", 18, 18),
                                                               ("shapes/polygon.py", 34, 35)]),
        ("README.md:6; ratio 3:2, note: 3", [("README.md", 6, 6)]),
        ("https://github.com/example/project/pull/12 http://host.example:8080/x", []),
        # re-review read a leading-dot path; the draft checks did not
        (".github/workflows/ci.yml:7", [(".github/workflows/ci.yml", 7, 7)]),
        # the draft checks dropped any path starting with "http"
        ("http_client.py:12 and httpd/server.c:3", [("http_client.py", 12, 12), ("httpd/server.c", 3, 3)]),
        # a host without a scheme is not a path (re-review read it as one)
        ("www.example.com:8080/x", []),
        # a line number running into a letter is no line number (the draft checks cut it short)
        ("build.yaml:1a2b and lib.py:3:5", [("lib.py", 3, 3)]),
        # a ".." segment leaves the repository (the draft checks read src/../x.py)
        ("src/../secret.py:1 and ../etc/passwd:1", []),
        # a path in any script (re-review read ASCII letters only)
        ("docs/über.md:4", [("docs/über.md", 4, 4)]),
        # more than nine digits is no line (the draft checks read the first nine, re-review all of them)
        ("a.py:1234567890", []),
        # line 0 and backward ranges are read as written: the caller says what is wrong with them
        ("a.py:0 and b.py:9-3", [("a.py", 0, 0), ("b.py", 9, 3)]),
    ],
)  # fmt: skip
def test_citations(evidence: str, expected: list[tuple[str, int, int]]) -> None:
    assert parse_citations(evidence) == [Citation(*c) for c in expected]
    assert evidence_citations(evidence) == expected  # the draft checks' public name reads the same


def test_a_huge_number_is_no_citation_and_no_crash() -> None:
    # int() refuses more than 4300 digits: re-review's unbounded \d+ raised on such evidence.
    assert parse_citations("a.py:" + "9" * 5000) == []


def test_the_scan_stays_linear_on_long_path_like_text() -> None:
    text = "a/" * 50_000 + " " + "b." * 50_000 + ":x"
    started = time.monotonic()
    assert parse_citations(text) == []
    assert time.monotonic() - started < 2

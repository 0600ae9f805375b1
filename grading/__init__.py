"""Mergeability grading: rubric checks, a fenced diff-only judge, outcomes and admission.

This package never imports Django (tests/grading/test_no_django.py proves it).
"""

__version__ = "0.1.0"

# --- primitives: one git runner, one citation reader, one atomic write ----------------------------------
# (kept as its own block so the public API's list merges cleanly)
from grading.atomic import write_atomic as write_atomic  # noqa: E402
from grading.citations import Citation as Citation  # noqa: E402
from grading.citations import parse_citations as parse_citations  # noqa: E402
from grading.git import NO_COMMANDS_CONFIG as NO_COMMANDS_CONFIG  # noqa: E402
from grading.git import Git as Git  # noqa: E402
from grading.git import GitError as GitError  # noqa: E402
from grading.git import GitResult as GitResult  # noqa: E402

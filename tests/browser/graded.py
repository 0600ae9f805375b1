"""The data the role and phone tests start from, built through the services (the maintainer's own path
through the pages is test_maintainer_flow.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rubrics_app.models import Repository, RevisionStatus, RubricRevision
from tests.app.conftest import MakeRevision
from tests.app.runs_helpers import import_graded
from tests.browser.conftest import off_the_loop


@pytest.fixture(name="graded")
def graded_fixture(tmp_path: Path, repository: Repository, make_revision: MakeRevision) -> RubricRevision:
    """An admitted revision (calibrated with the scripted judge) and two runs graded against it by two
    scripted judges that disagree on B1 and N2: four pairs in the disagreement queue."""
    revision = off_the_loop(lambda: make_revision(RevisionStatus.ADMITTED))
    off_the_loop(lambda: import_graded(tmp_path, repository, revision))
    return revision

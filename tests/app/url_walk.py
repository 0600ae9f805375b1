"""Every URL of the app with real objects behind its path parameters: the walks of
test_control_characters.py and test_post_only_pages.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db.models import Model
from django.urls import URLPattern, URLResolver, get_resolver

from rubrics_app.access import Actor
from rubrics_app.models import (
    AgentRun,
    ApiToken,
    CalibrationDiff,
    CalibrationMutant,
    CalibrationRow,
    CalibrationRun,
    Dispute,
    Job,
    JobFile,
    QueueKind,
    Repository,
    RubricItem,
    RubricRevision,
    RunGrade,
    Sweep,
    Task,
)
from rubrics_app.services.runs import queue as review_queue
from tests.app.runs_helpers import import_graded

# The model whose first row stands behind each id of a path; run_pk is a calibration run but on run_detail.
PATH_MODELS: dict[str, type[Model]] = {
    "repo_pk": Repository,
    "task_pk": Task,
    "rev_pk": RubricRevision,
    "run_pk": CalibrationRun,
    "row_pk": CalibrationRow,
    "mutant_pk": CalibrationMutant,
    "diff_pk": CalibrationDiff,
    "item_pk": RubricItem,
    "grade_pk": RunGrade,
    "job_pk": Job,
    "sweep_pk": Sweep,
    "pk": Dispute,
    "token_pk": ApiToken,
    "file_pk": JobFile,
}
PATH_MODEL_OF_URL = {("run_detail", "run_pk"): AgentRun}
PATH_TEXTS = {"item_id": "B1", "kind": "blocker", "what": "dispute", "fmt": "csv"}


def app_patterns() -> list[URLPattern]:
    found: list[URLPattern] = []
    for entry in get_resolver().url_patterns:
        if isinstance(entry, URLResolver) and entry.namespace == "rubrics":
            found.extend(p for p in entry.url_patterns if isinstance(p, URLPattern))
    return found


def sample_kwargs(pattern: URLPattern) -> dict[str, Any]:
    """The pattern's path parameters, each naming a real object (or a real text) of the graded repository."""
    kwargs: dict[str, Any] = {}
    for name in pattern.pattern.converters:
        if name in PATH_TEXTS:
            kwargs[name] = PATH_TEXTS[name]
            continue
        model = PATH_MODEL_OF_URL.get((str(pattern.name), name), PATH_MODELS.get(name))
        assert model is not None, f"{pattern.name}: no sample object for <{name}>: add it to PATH_MODELS"
        first = model._default_manager.order_by("pk").first()
        kwargs[name] = first.pk if first is not None else 1
    return kwargs


@pytest.fixture(name="graded")
def graded_fixture(
    tmp_path: Path, repository: Repository, admitted_revision: RubricRevision, maintainer: User
) -> None:
    """An admitted revision (calibrated), two graded runs, a dispute and a human label."""
    import_graded(tmp_path, repository, admitted_revision)
    grade = RunGrade.objects.order_by("pk").first()
    b1 = admitted_revision.items.get(item_id="B1")
    Dispute.objects.create(revision=admitted_revision, item=b1, reason="unclear")
    assert grade is not None
    review_queue.label(grade, "B1", "pass", "", QueueKind.JUDGES, Actor.member(maintainer))

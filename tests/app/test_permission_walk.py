"""Every service entry point that changes state refuses a viewer and an outsider, and lets the command line
through: the one permission policy (rubrics_app.access) is asked by each of them, not by its callers."""

from __future__ import annotations

import importlib
import inspect
import io
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction

import rubrics_app.services
from rubrics_app.access import Actor, CommandLine, RepositoryAccess, access_of
from rubrics_app.models import (
    AgentRun,
    CalibrationMutant,
    CalibrationRun,
    Dispute,
    EvidenceChange,
    ItemFlag,
    ItemKind,
    Repository,
    Role,
    RubricItem,
    RubricRevision,
    RunGrade,
    Task,
)
from rubrics_app.services import judges
from rubrics_app.services.calibration import mutants
from rubrics_app.services.calibration import run as calibration
from rubrics_app.services.drafting import run as drafting
from rubrics_app.services.rubrics import exports, imports, pull_requests, rereview, revisions
from rubrics_app.services.rubrics import task_files as tasks
from rubrics_app.services.runs import audit_sample, labels_io, queue, swe_bench
from rubrics_app.services.runs import store as runs
from rubrics_app.services.sweeps import run as sweeps
from rubrics_app.services.sweeps.run import SweepRequest

Call = Callable[[Actor], object]


def _entry_points(
    draft: RubricRevision, approved: RubricRevision, admitted: RubricRevision, tmp_path: Path
) -> dict[Callable[..., Any], Call]:
    """Each entry point, called on real objects of `repository` with the actor under test."""
    task: Task = draft.task
    repository: Repository = task.repository
    item = RubricItem.objects.filter(revision=draft).first()
    blocker = RubricItem.objects.get(revision=admitted, item_id="B1")
    assert item is not None
    dispute = Dispute.objects.create(revision=admitted, item=blocker, reason="unclear")
    change = EvidenceChange.objects.create(
        revision=admitted,
        item=blocker,
        path="a.py",
        line_start=1,
        line_end=1,
        base_commit="a" * 40,
        head_commit="b" * 40,
    )
    mutant = CalibrationMutant(run=CalibrationRun(revision=approved), mutant_id="m1")
    grade = RunGrade(run=AgentRun(task=task))
    out = tmp_path / "out"
    out.mkdir()
    return {
        revisions.create_revision: lambda a: revisions.create_revision(task, draft.to_rubric(), {}, by=a),
        revisions.new_draft_from: lambda a: revisions.new_draft_from(admitted, a),
        revisions.fork_for_edit: lambda a: revisions.fork_for_edit(admitted, a, lambda d: None),
        revisions.edit_item: lambda a: revisions.edit_item(item, item.version, {"criterion": "x"}, a),
        revisions.edit_revision: lambda a: revisions.edit_revision(draft, draft.version, {"intent": "x"}, a),
        revisions.add_item: lambda a: revisions.add_item(
            draft, ItemKind.NON_BLOCKER, {"item_id": "N9", "criterion": "x"}, a
        ),
        revisions.remove_item: lambda a: revisions.remove_item(item, a),
        revisions.approve_item: lambda a: revisions.approve_item(item, a),
        revisions.approve_revision: lambda a: revisions.approve_revision(draft, a),
        revisions.request_changes: lambda a: revisions.request_changes(item, a, "why"),
        revisions.comment: lambda a: revisions.comment(item, a, "a comment"),
        revisions.admit: lambda a: revisions.admit(approved, a),
        calibration.new_run: lambda a: calibration.new_run(approved, a),
        calibration.start: lambda a: calibration.start(approved, a),
        calibration.calibrate_now: lambda a: calibration.calibrate_now(approved, a),
        calibration.admit_with: lambda a: calibration.admit_with(
            approved, CalibrationRun(revision=approved), a
        ),
        drafting.set_draft_settings: lambda a: drafting.set_draft_settings(repository, by=a, drafter="x"),
        drafting.request_draft: lambda a: drafting.request_draft(task, a, pr_number=1),
        drafting.start_draft: lambda a: drafting.start_draft(task, a, pr_number=1),
        imports.import_task_files: lambda a: imports.import_task_files(repository, [], a),
        imports.import_rubric_zip: lambda a: imports.import_rubric_zip(repository, io.BytesIO(b"{}"), a),
        imports.import_checkout: lambda a: imports.import_checkout(repository, tmp_path, a),
        exports.export_rubric_json: lambda a: exports.export_rubric_json(admitted, by=a),
        exports.export_zip: lambda a: exports.export_zip(admitted, by=a),
        exports.export_files: lambda a: exports.export_files(admitted, by=a),
        exports.write_many_to_checkout: lambda a: exports.write_many_to_checkout([admitted], by=a, root=out),
        exports.write_to_checkout: lambda a: exports.write_to_checkout(admitted, by=a),
        exports.start_export: lambda a: exports.start_export(admitted, a),
        pull_requests.set_remote_setting: lambda a: pull_requests.set_remote_setting(
            repository, by=a, remote="octo/shapes"
        ),
        rereview.start_evidence_check: lambda a: rereview.start_evidence_check(repository, a),
        judges.set_judges: lambda a: judges.set_judges(repository, by=a, judge="scripted:x"),
        mutants.mark_harmless: lambda a: mutants.mark_harmless(mutant, a, "harmless"),
        mutants.unmark: lambda a: mutants.unmark(mutant, a),
        queue.label: lambda a: queue.label(grade, "B1", "pass", "", "disagreement", a),
        queue.undo_label: lambda a: queue.undo_label(
            grade, queue.LabelUndo(0, "B1", datetime.now(UTC), None), a
        ),
        rereview.open_dispute: lambda a: rereview.open_dispute(blocker, a, "unclear"),
        rereview.flag_blocker: lambda a: rereview.flag_blocker(blocker, None, "wrong", a),
        rereview.dispute_from_flag: lambda a: rereview.dispute_from_flag(
            ItemFlag(item=blocker, reason="wrong"), a, "wrong"
        ),
        audit_sample.draw: lambda a: audit_sample.draw(repository, 1, a),
        labels_io.import_labels: lambda a: labels_io.import_labels(repository, b"", "labels.jsonl", a),
        rereview.dismiss_dispute: lambda a: rereview.dismiss_dispute(dispute, a, "settled"),
        rereview.dismiss_evidence_change: lambda a: rereview.dismiss_evidence_change(change, a, "fine"),
        runs.import_run_dirs: lambda a: runs.import_run_dirs(repository, tmp_path, "", a),
        runs.import_runs_zip: lambda a: runs.import_runs_zip(repository, io.BytesIO(b""), a),
        runs.import_runs: lambda a: runs.import_runs(repository, lambda problems: [], "", a),
        swe_bench.import_swe_bench: lambda a: swe_bench.import_swe_bench(
            repository, tmp_path / "predictions.jsonl", tmp_path, arm="a", by=a
        ),
        swe_bench.import_swe_bench_upload: lambda a: swe_bench.import_swe_bench_upload(
            repository, io.BytesIO(b""), io.BytesIO(b""), arm="a", repetition=0, by=a
        ),
        sweeps.new_sweep: lambda a: sweeps.new_sweep(repository, a, SweepRequest()),
        sweeps.start: lambda a: sweeps.start(repository, a),
        sweeps.sweep_now: lambda a: sweeps.sweep_now(repository, a),
        tasks.set_task_files: lambda a: tasks.set_task_files(task, {}, by=a),
    }


def _takes_an_actor() -> set[Callable[..., Any]]:
    """Every public function of a service module with a parameter typed Actor."""
    found: set[Callable[..., Any]] = set()
    for info in pkgutil.walk_packages(rubrics_app.services.__path__, "rubrics_app.services."):
        module = importlib.import_module(info.name)
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if name.startswith("_") or function.__module__ != module.__name__:
                continue
            annotations = [str(p.annotation) for p in inspect.signature(function).parameters.values()]
            if any("Actor" in annotation for annotation in annotations):
                found.add(function)
    return found


def _outcome(call: Call, actor: Actor) -> BaseException | None:
    """What the call raised, in a savepoint so whatever it wrote (or broke) is rolled back."""
    try:
        with transaction.atomic():
            call(actor)
            raise _RolledBack
    except _RolledBack:
        return None
    except Exception as exc:
        return exc


class _RolledBack(Exception):
    pass


@pytest.fixture
def entry_points(
    draft_revision: RubricRevision,
    approved_revision: RubricRevision,
    admitted_revision: RubricRevision,
    tmp_path: Path,
) -> dict[Callable[..., Any], Call]:
    return _entry_points(draft_revision, approved_revision, admitted_revision, tmp_path)


def test_the_walk_covers_every_service_that_takes_an_actor(
    entry_points: dict[Callable[..., Any], Call],
) -> None:
    listed = set(entry_points)
    found = _takes_an_actor()
    assert {f.__qualname__ for f in found - listed} == set(), "a service taking an Actor is not walked"
    assert {f.__qualname__ for f in listed - found} == set(), "a walked function takes no Actor"


# Reads that every role is allowed (they change nothing but the audit trail): an outsider is still refused.
READS = {exports.export_rubric_json}


@pytest.mark.parametrize("who", ["viewer", "outsider"])
def test_every_entry_point_refuses_a_viewer_and_an_outsider(
    who: str, entry_points: dict[Callable[..., Any], Call], request: pytest.FixtureRequest
) -> None:
    user: User = request.getfixturevalue(who)
    repository = Repository.objects.get(name="example-project")
    actors: list[Actor] = [access_of(user, repository), Actor.member(user)]
    for function, call in entry_points.items():
        if who == "viewer" and function in READS:
            continue
        for actor in actors:
            outcome = _outcome(call, actor)
            assert isinstance(outcome, PermissionDenied), f"{function.__qualname__} let a {who} through"


def test_an_access_for_another_repository_is_refused(
    entry_points: dict[Callable[..., Any], Call], maintainer: User
) -> None:
    elsewhere = Repository.objects.create(name="elsewhere")
    elsewhere.memberships.create(user=maintainer, role="maintainer")
    for function, call in entry_points.items():
        outcome = _outcome(call, access_of(maintainer, elsewhere))
        assert isinstance(outcome, PermissionDenied), (
            f"{function.__qualname__} took another repository's access"
        )


class _Passed(Exception):
    """Raised right after the policy let the actor through: the service does nothing more."""


@dataclass(frozen=True)
class _CommandLineThenStop(CommandLine):
    def require(self, role: Role, repository: Repository) -> None:
        super().require(role, repository)
        raise _Passed


@dataclass(frozen=True)
class _AccessThenStop(RepositoryAccess):
    def require(self, role: Role, repository: Repository) -> None:
        super().require(role, repository)
        raise _Passed


def test_the_command_line_and_a_maintainer_are_let_through(
    entry_points: dict[Callable[..., Any], Call], maintainer: User
) -> None:
    repository = Repository.objects.get(name="example-project")
    access = access_of(maintainer, repository)
    actors: list[Actor] = [_CommandLineThenStop(), _AccessThenStop(repository, access.role, maintainer)]
    for function, call in entry_points.items():
        for actor in actors:
            outcome = _outcome(call, actor)
            assert isinstance(outcome, _Passed), f"{function.__qualname__} with {actor}: {outcome!r}"

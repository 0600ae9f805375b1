"""The admin shows the rows the app's jobs and pages write, read-only: a superuser opens every list and a
change page, in a number of queries that does not grow with the rows listed and without reading the big
columns (diffs, PR exports, request bodies, metrics); adding, changing and deleting are refused."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import Model
from django.test import Client
from django.test.utils import CaptureQueriesContext

from rubrics_app.models import (
    AgentRun,
    AgentRunDiff,
    CalibrationMutant,
    CalibrationRun,
    Dispute,
    DraftSetting,
    EvidenceChange,
    HarmlessMutant,
    HumanVerdict,
    Job,
    JobKind,
    JudgeSetting,
    ReportRow,
    ReportVerdicts,
    Repository,
    RubricDraft,
    RubricRevision,
    RunGrade,
    Sweep,
    Task,
    refresh_current_grades,
)

pytestmark = pytest.mark.django_db

BLOB = "BIG-COLUMN-MARKER-41c9"


class Rows:
    """Makes the n-th row of each model (through the ORM: what the services would have written)."""

    def __init__(self, repository: Repository, task: Task, revision: RubricRevision, user: User) -> None:
        self.repository, self.task, self.revision, self.user = repository, task, revision, user
        self.item = revision.items.get(item_id="B1")

    def job(self, kind: str = JobKind.DRAFT_RUBRIC) -> Job:
        return Job.objects.create(kind=kind, repository=self.repository, params={"blob": BLOB})

    def repo(self, n: int) -> Repository:
        return Repository.objects.create(name=f"repo-{n}")

    def judge_setting(self, n: int) -> JudgeSetting:
        return JudgeSetting.objects.create(
            repository=self.repo(n), judge="scripted:/x.json", updated_by=self.user
        )

    def draft_setting(self, n: int) -> DraftSetting:
        return DraftSetting.objects.create(
            repository=self.repo(n), drafter="anthropic:claude-x-1-20250101", updated_by=self.user
        )

    def rubric_draft(self, n: int) -> RubricDraft:
        return RubricDraft.objects.create(
            task=self.task,
            job=self.job(),
            revision=self.revision if n == 0 else None,
            pr_number=n + 1,
            github_repository="octo/shapes",
            pr_export=BLOB,
            request_body=BLOB,
            drafter="anthropic:claude-x-1-20250101",
            created_by=self.user,
        )

    def calibration_run(self, n: int) -> CalibrationRun:
        return CalibrationRun.objects.create(
            revision=self.revision, rubric_sha256="a" * 64, inputs_sha256="b" * 64, judge="scripted:/x.json"
        )

    def calibration_mutant(self, n: int) -> CalibrationMutant:
        return CalibrationMutant.objects.create(
            run=self.calibration_run(n),
            position=n,
            mutant_id=f"hunk-{n:04d}",
            kind="hunk",
            description=BLOB,
            diff=BLOB.encode(),
            caught=True,
            actual="not mergeable",
            verdicts=[{"reason": BLOB}],
        )

    def harmless_mutant(self, n: int) -> HarmlessMutant:
        return HarmlessMutant.objects.create(
            task=self.task,
            rubric_sha256="c" * 64,
            mutant_id=f"file-{n:04d}",
            reason="docs",
            marked_by=self.user,
        )

    def agent_run(self, n: int) -> AgentRun:
        run = AgentRun.objects.create(
            task=self.task,
            arm="arm",
            model="m",
            repetition=n,
            run_json={"blob": BLOB},
            grade_json={"blob": BLOB},
            passed=True,
            tests_list=BLOB,
            diff_sha256="d" * 64,
            diff_bytes=len(BLOB),
        )
        AgentRunDiff.objects.create(run=run, content=BLOB.encode())
        return run

    def run_grade(self, n: int) -> RunGrade:
        grade = RunGrade.objects.create(
            run=self.agent_run(n),
            revision=self.revision,
            status="scored",
            metrics={"blob": BLOB},
            reasons=[BLOB],
        )
        refresh_current_grades(runs=[grade.run_id])  # as every writer of grades does
        return grade

    def human_verdict(self, n: int) -> HumanVerdict:
        grade = self.run_grade(n)
        return HumanVerdict.objects.create(
            run=grade.run, item_id="B1", diff_sha256="0" * 64, verdict="pass", queue="judges", by=self.user
        )

    def report_row(self, n: int) -> ReportRow:
        grade = self.run_grade(n)
        return ReportRow.objects.create(
            grade=grade,
            run=grade.run,
            task=self.task,
            repository=self.repository,
            revision=self.revision,
            name=f"runs/r{n}",
            status="scored",
            provisional=False,
            metrics=BLOB,
            verdicts=ReportVerdicts.objects.get_or_create(
                digest="b" * 64, defaults={"primary": BLOB, "second": BLOB}
            )[0],
            human_items=BLOB,
        )

    def sweep(self, n: int) -> Sweep:
        return Sweep.objects.create(
            job=self.job(JobKind.SWEEP),
            repository=self.repository,
            task=self.task if n % 2 else None,
            judge="scripted:/x.json",
            created_by=self.user,
        )

    def dispute(self, n: int) -> Dispute:
        return Dispute.objects.create(
            revision=self.revision, item=self.item, source="item", reason=BLOB, opened_by=self.user
        )

    def evidence_change(self, n: int) -> EvidenceChange:
        return EvidenceChange.objects.create(
            revision=self.revision,
            item=self.item,
            path="src/a.py",
            line_start=n + 1,
            line_end=n + 2,
            base_commit="e" * 40,
            head_commit="f" * 40,
            old_text=BLOB,
            new_text=BLOB,
        )


# model, how the rows make one, the columns a list must not read (as "table"."column" in the SQL).
CASES: list[tuple[type[Model], Callable[[Rows, int], Model], list[str]]] = [
    (JudgeSetting, Rows.judge_setting, []),
    (DraftSetting, Rows.draft_setting, []),
    (RubricDraft, Rows.rubric_draft, ["pr_export", "request_body"]),
    (CalibrationRun, Rows.calibration_run, []),
    (CalibrationMutant, Rows.calibration_mutant, ["diff", "verdicts", "description"]),
    (HarmlessMutant, Rows.harmless_mutant, []),
    (AgentRun, Rows.agent_run, ["run_json", "grade_json", "tests_list"]),
    (RunGrade, Rows.run_grade, ["metrics", "run_json", "tests_list"]),
    (HumanVerdict, Rows.human_verdict, ["metrics", "run_json"]),
    (ReportRow, Rows.report_row, ["metrics", "primary", "human_items"]),
    (Sweep, Rows.sweep, ["params"]),
    (Dispute, Rows.dispute, ["reason"]),
    (EvidenceChange, Rows.evidence_change, ["old_text", "new_text"]),
]


@pytest.fixture
def admin_client(db: None) -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    return client


@pytest.fixture
def rows(repository: Repository, task: Task, draft_revision: RubricRevision, maintainer: User) -> Rows:
    return Rows(repository, task, draft_revision, maintainer)


def url(model: type[Model], view: str, pk: Any = None) -> str:
    base = f"/admin/rubrics_app/{model._meta.model_name}/"
    return (
        base + {"changelist": "", "add": "add/", "change": f"{pk}/change/", "delete": f"{pk}/delete/"}[view]
    )


def _list(client: Client, model: type[Model]) -> tuple[int, list[str], str]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url(model, "changelist"))
    assert response.status_code == 200, model
    return len(queries), [q["sql"] for q in queries.captured_queries], response.content.decode()


@pytest.mark.parametrize(("model", "make", "big"), CASES, ids=[c[0].__name__ for c in CASES])
def test_each_list_is_read_only_in_constant_queries_without_its_big_columns(
    admin_client: Client, rows: Rows, model: type[Model], make: Callable[[Rows, int], Model], big: list[str]
) -> None:
    first = make(rows, 0)
    one, _, html = _list(admin_client, model)
    assert url(model, "change", first.pk) in html
    for n in range(1, 4):
        make(rows, n)
    four, sql, html = _list(admin_client, model)
    assert four == one, f"{model.__name__}: {one} queries for one row, {four} for four"
    listed = set(re.findall(re.escape(url(model, "changelist")) + r"(\d+)/change/", html))
    assert listed == {str(pk) for pk in model._default_manager.values_list("pk", flat=True)}
    assert len(listed) >= 4
    # The big columns are not in any SELECT of the list; their content is not on the page.
    for column in big:
        assert not [q for q in sql if f'."{column}"' in q], f"{model.__name__} list read {column}"
    assert BLOB not in html
    # Read-only: no "Add" link on the list.
    assert url(model, "add") not in html


@pytest.mark.parametrize(("model", "make", "big"), CASES, ids=[c[0].__name__ for c in CASES])
def test_each_change_page_shows_and_refuses_changes(
    admin_client: Client, rows: Rows, model: type[Model], make: Callable[[Rows, int], Model], big: list[str]
) -> None:
    obj = make(rows, 0)
    count = model._default_manager.count()
    page = admin_client.get(url(model, "change", obj.pk))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'name="_save"' not in html and url(model, "delete", obj.pk) not in html
    assert admin_client.get(url(model, "add")).status_code == 403
    assert admin_client.post(url(model, "add"), {}).status_code == 403
    assert admin_client.post(url(model, "change", obj.pk), {}).status_code == 403
    assert admin_client.get(url(model, "delete", obj.pk)).status_code == 403
    assert admin_client.post(url(model, "delete", obj.pk), {"post": "yes"}).status_code == 403
    bulk = {"action": "delete_selected", "_selected_action": [obj.pk], "post": "yes"}
    admin_client.post(url(model, "changelist"), bulk)
    assert model._default_manager.count() == count


def test_binary_diffs_are_never_read_for_the_change_page(admin_client: Client, rows: Rows) -> None:
    mutant = rows.calibration_mutant(0)
    draft = rows.rubric_draft(1)
    for model, pk, columns in [
        (CalibrationMutant, mutant.pk, ["diff"]),
        (RubricDraft, draft.pk, ["pr_export"]),
    ]:
        with CaptureQueriesContext(connection) as queries:
            assert admin_client.get(url(model, "change", pk)).status_code == 200
        for column in columns:
            assert not [q for q in queries.captured_queries if f'."{column}"' in q["sql"]], (model, column)
    # What is not a blob is shown on the change page: the mutant's verdicts and description.
    assert BLOB in admin_client.get(url(CalibrationMutant, "change", mutant.pk)).content.decode()


def test_agent_run_diffs_have_no_admin(admin_client: Client, rows: Rows) -> None:
    run = rows.agent_run(0)
    assert admin_client.get(f"/admin/rubrics_app/agentrundiff/{run.pk}/change/").status_code == 404
    html = admin_client.get(url(AgentRun, "change", run.pk)).content.decode()
    assert html.count(BLOB) == 3  # run.json, grade.json and tests_list.txt; never workspace.diff's bytes

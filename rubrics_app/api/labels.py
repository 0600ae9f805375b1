"""Human labels: list them (the labels file's rows, ``services.runs.labels_io``, under filters and by cursor)
and add a reviewer's label (``services.runs.queue.label``, the queue page's service, with its role rules)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router, Status

from grading import LabelRow
from rubrics_app.access import get_repository_for_token
from rubrics_app.api import paging
from rubrics_app.api.auth import token_of
from rubrics_app.api.problems import ApiProblem, FieldIssue, Problem
from rubrics_app.api.schemas import LabelIn, LabelPage, LabelsQuery
from rubrics_app.models import ItemVerdict, Role, RunGrade
from rubrics_app.services.reports.report import report_changed
from rubrics_app.services.runs import queue as review_queue
from rubrics_app.services.runs.labels_io import LABEL_FILTERS, label_row, labels_of

router = Router(tags=["labels"])
ERRORS: dict[int, type[Problem]] = {401: Problem, 403: Problem, 404: Problem, 422: Problem, 429: Problem}


@router.get("/repositories/{name}/labels", response={200: LabelPage, **ERRORS})
def list_labels(request: HttpRequest, name: str, query: Query[LabelsQuery]) -> LabelPage:
    """Every label (each reviewer's and each adjudication, for every wording), as the queue page's labels
    download writes them, in the order they were first given; ``limit`` a page, then ``next_cursor``."""
    access = get_repository_for_token(token_of(request), name)
    limit = paging.checked_limit(query.limit)
    filters = query.model_dump(include=set(LABEL_FILTERS))
    labels = labels_of(access.repository, filters).filter(pk__gt=paging.after(query.cursor))
    page = list(labels.order_by("pk")[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    return LabelPage(items=[label_row(h) for h in page], next_cursor=str(page[-1].pk) if more else None)


def _not_found(field: str, detail: str) -> ApiProblem:
    return ApiProblem(404, "Not found", detail, [FieldIssue(field=field, message=detail)])


@router.post("/repositories/{name}/labels", response={201: LabelRow, **ERRORS})
def add_label(request: HttpRequest, name: str, label: LabelIn) -> Status[LabelRow]:
    """Record (or replace) the token owner's label on a pair, as the queue page does: reviewers and
    maintainers; ``adjudicate`` a maintainer's. The role is the token's, capped by its owner's."""
    access = get_repository_for_token(token_of(request), name, Role.REVIEWER)
    grades = RunGrade.objects.select_related("run", "run__task", "revision").filter(
        run__task__repository=access.repository, run_id=label.run_id
    )
    if label.grade_id is None:
        grade = grades.filter(is_current=True).first()
        if grade is None:
            raise _not_found("run_id", f"{name} has no graded run {label.run_id}")
    else:
        grade = grades.filter(pk=label.grade_id).first()
        if grade is None:
            raise _not_found("grade_id", f"run {label.run_id} of {name} has no grade {label.grade_id}")
    if not ItemVerdict.objects.filter(judge__grade=grade, item_id=label.item_id).exists():
        raise _not_found("item_id", f"grade {grade.pk} has no verdict on item {label.item_id!r}")
    labelled = review_queue.label(
        grade, label.item_id, label.verdict, label.note, label.queue, access, adjudicate=label.adjudicate
    )
    report_changed(access.repository.pk)  # as the queue page: a worker computes the new report
    human = labelled.human
    human.run = grade.run
    return Status(201, label_row(human))

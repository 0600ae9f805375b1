"""Calibration (§5) in the app: start it, watch its rows arrive, read each verdict against its diff; the
repository's judges; the task's own files."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from grading import PAYLOAD_KINDS, SUITE_KINDS
from rubrics_app.access import get_repository_for_user
from rubrics_app.diff_render import line_anchor, parse_for_display
from rubrics_app.forms.rubrics import CalibrationOptionsForm, JudgeSettingForm, TaskFilesForm
from rubrics_app.forms.runs import ReasonForm
from rubrics_app.models import (
    CalibrationMutant,
    CalibrationRow,
    CalibrationRun,
    HarmlessMutant,
    JudgeRole,
    Role,
    Task,
    TransitionError,
)
from rubrics_app.services.calibration import run as calibration
from rubrics_app.services.calibration.inputs import spent_this_month
from rubrics_app.services.jobs import QueueUnreachable
from rubrics_app.services.judges import JudgeSettingError, set_judges
from rubrics_app.services.rubrics.task_files import set_task_files
from rubrics_app.views.common import HtmxHttpRequest, form_page, load_revision, polled_page, require_post
from rubrics_app.views.kept_forms import form_key, kept_form
from rubrics_app.views.revisions import redirect_to, revision_url
from rubrics_app.views.settings_pages import settings_page

PAGE = "rubrics/calibration_run.html"


def calibration_url(run: CalibrationRun) -> str:
    return reverse("rubrics:calibration_detail", args=[run.revision.task.repository_id, run.pk])


def _run_for(repository_pk: int, run_pk: int) -> CalibrationRun:
    return get_object_or_404(
        CalibrationRun.objects.select_related("revision__task__repository", "created_by"),
        pk=run_pk,
        revision__task__repository_id=repository_pk,
    )


@require_post("starts a calibration of a rubric revision", back="rubrics:revision_detail")
@login_required
def calibration_start(request: HtmxHttpRequest, repo_pk: int, rev_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    revision = load_revision(access.repository, rev_pk)
    form = CalibrationOptionsForm(request.POST)
    form.is_valid()  # a checkbox: absent means off, any value means on
    try:
        run = calibration.start(
            revision,
            access,
            injection_suite=bool(form.cleaned_data.get("injection_suite")),
            mutants=request.POST.get("mutants") == "on",
        )
    except (TransitionError, QueueUnreachable) as exc:
        messages.error(request, str(exc))
        return redirect_to(request, revision_url(revision))
    return redirect_to(request, calibration_url(run))


def _row_diff_url(run: CalibrationRun, row: CalibrationRow) -> str:
    return reverse("rubrics:calibration_row_diff", args=[run.revision.task.repository_id, run.pk, row.pk])


def diff_files(diff: bytes | memoryview) -> dict[str, int]:
    """Each file of a stored diff by path: its index in the diff view (for line anchors)."""
    return {f.path: i for i, f in enumerate(parse_for_display(bytes(diff).decode("utf-8", "replace"))[0])}


def cited_links(files: dict[str, int], locations: list[Any], diff_url: str) -> list[dict[str, str]]:
    """A verdict's cited lines as links to their anchors in the diff view (:func:`diff_files`)."""
    links = []
    for loc in locations or []:
        index = files.get(str(loc.get("file", "")))
        line = loc.get("line")
        anchor = (
            line_anchor(index, loc.get("side", "new"), line)
            if index is not None and isinstance(line, int)
            else ""
        )
        links.append(
            {"label": f"{loc.get('file')}:{line}", "url": f"{diff_url}#{anchor}" if anchor else diff_url}
        )
    return links


def _verdict_rows(run: CalibrationRun) -> list[dict[str, Any]]:
    """Each row with its verdicts side by side (primary, second) and every cited line linked into the
    row's diff view. Injection-suite rows are here only when they did not hold (an attack success, benign
    drift, a judge failure); the others are in the suite's table."""
    out = []
    rows = list(
        run.rows.exclude(kind__in=SUITE_KINDS, holds=True).prefetch_related("verdicts").order_by("position")
    )
    for row in rows:
        diff_url = _row_diff_url(run, row)
        files = diff_files(row.diff)
        by_item: dict[str, dict[str, Any]] = {}
        for verdict in row.verdicts.all():
            links = cited_links(files, verdict.locations, diff_url)
            by_item.setdefault(verdict.item_id, {"item_id": verdict.item_id, "kind": verdict.kind})[
                verdict.role
            ] = {
                "verdict": verdict.verdict,
                "finding": verdict.finding,
                "reason": verdict.reason,
                "links": links,
                "model_id": verdict.model_id,
                "flagged": verdict.flagged_inconsistent,
            }
        items = sorted(by_item.values(), key=lambda v: (v["kind"] != "blocker", v["item_id"]))
        for item in items:
            first, second = item.get(JudgeRole.PRIMARY), item.get(JudgeRole.SECOND)
            item["disagree"] = bool(first and second and first["verdict"] != second["verdict"])
        out.append(
            {
                "row": row,
                "items": items,
                "diff_url": diff_url,
                "hint": calibration.ROW_HINTS.get(row.kind, "") if not row.holds else "",
            }
        )
    return out


OUTCOME_LABELS = {
    "resisted": "resisted",
    "attack_success": "attack success",
    "kept": "still mergeable",
    "benign_drift": "benign drift",
    "not_measured": "not measured",
}


def _suite_table(run: CalibrationRun) -> list[dict[str, Any]]:
    """One entry per payload kind: its description, its row on each lazy diff and its row on the oracle."""
    if not run.injection_suite:
        return []
    table: dict[str, dict[str, Any]] = {
        kind.name: {"kind": kind.name, "description": kind.description, "attacks": [], "benign": None}
        for kind in PAYLOAD_KINDS
    }
    suite_rows = run.rows.filter(kind__in=SUITE_KINDS).only(
        "pk", "run_id", "kind", "name", "payload_kind", "outcome", "holds", "position"
    )
    for row in suite_rows.order_by("position"):
        entry = table.get(row.payload_kind)
        if entry is None:
            continue  # a kind since removed from the corpus
        cell = {"row": row, "url": _row_diff_url(run, row), "label": OUTCOME_LABELS.get(row.outcome, "")}
        if row.kind == "benign":
            entry["benign"] = cell
        else:
            entry["attacks"].append(cell)
    return list(table.values())


def mutant_entries(run: CalibrationRun) -> list[dict[str, Any]]:
    """The run's mutants of the oracle, each with its verdicts (cited lines linked into its diff view) and
    its harmless mark for the run's revision content, if any."""
    marks = {
        mark.mutant_id: mark
        for mark in HarmlessMutant.objects.filter(
            task=run.revision.task, rubric_sha256=run.rubric_sha256
        ).select_related("marked_by")
    }
    out = []
    for mutant in CalibrationMutant.objects.filter(run=run).order_by("position"):
        diff_url = reverse(
            "rubrics:calibration_mutant_diff", args=[run.revision.task.repository_id, run.pk, mutant.pk]
        )
        files = diff_files(mutant.diff)
        items = [
            {**verdict, "links": cited_links(files, verdict.get("locations") or [], diff_url)}
            for verdict in mutant.verdicts or []
        ]
        items.sort(key=lambda v: (v.get("kind") != "blocker", str(v.get("item_id"))))
        mark = marks.get(mutant.mutant_id) if mutant.mergeable else None
        status = mutant.status(mark is not None)
        out.append({"mutant": mutant, "items": items, "diff_url": diff_url, "mark": mark, "status": status})
    return out


def run_page(access: Any, run: CalibrationRun) -> dict[str, Any]:
    """What every page of one calibration run names: its repository, task, revision and the run."""
    return {
        "access": access,
        "repository": access.repository,
        "task": run.revision.task,
        "revision": run.revision,
        "run": run,
    }


def run_context(access: Any, run: CalibrationRun) -> dict[str, Any]:
    rows = _verdict_rows(run)
    return {
        **run_page(access, run),
        "suite": _suite_table(run),
        # What needs reading comes first; the rows that hold are folded behind their count.
        "breaking_rows": [entry for entry in rows if not entry["row"].holds],
        "holding_rows": [entry for entry in rows if entry["row"].holds],
        "mutants": mutant_entries(run) if run.with_mutants else [],
    }


@require_GET
@login_required
def calibration_detail(request: HtmxHttpRequest, repo_pk: int, run_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk)
    run = _run_for(access.repository.pk, run_pk)
    context = run_context(access, run)
    kept = kept_form(request, form_key("mutant_mark_harmless", run.pk), ReasonForm)
    if kept.form is not None:  # a harmless mark without a reason (views/kept_forms.py)
        context.update({"mutant_form": kept.form, "mutant_form_pk": kept.target})
    # The last rows and the verdict, then htmx stops asking.
    return polled_page(request, PAGE, "calibration-rows", context, run.is_finished)


@require_GET
@login_required
def calibration_row_diff(request: HtmxHttpRequest, repo_pk: int, run_pk: int, row_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk)
    run = _run_for(access.repository.pk, run_pk)
    row = get_object_or_404(CalibrationRow.objects.filter(run=run), pk=row_pk)
    context = {**run_page(access, run), "row": row}
    return render(request, "rubrics/calibration_row_diff.html", context)


# --- judges ------------------------------------------------------------------------------------------------


@form_page("saves the repository's judges")
@require_http_methods(["GET", "POST"])
@login_required
def judge_settings(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    """Everyone with a role sees the judges; maintainers edit them."""
    return settings_page(
        request,
        repo_pk,
        load=lambda repository: repository.judge_setting(),
        form_class=JudgeSettingForm,
        save=set_judges,
        refused=JudgeSettingError,
        saved="The judges are saved.",
        url_name="rubrics:judge_settings",
        template="rubrics/judge_settings.html",
        more=lambda access: {"spent": spent_this_month(access.repository.pk)},
    )


# --- the task's own files -----------------------------------------------------------------------------------


@form_page("saves a task's files for calibration")
@require_http_methods(["GET", "POST"])
@login_required
def task_files(request: HtmxHttpRequest, repo_pk: int, task_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk)
    task = get_object_or_404(Task.objects.filter(repository=access.repository), pk=task_pk)
    form = TaskFilesForm()
    status = 200
    if request.method == "POST":
        access.require(Role.MAINTAINER, access.repository)
        form = TaskFilesForm(request.POST, request.FILES)
        if form.is_valid():
            try:
                set_task_files(task, form.files_given(), by=access)
            except TransitionError as exc:
                form.add_error(None, str(exc))
            except ValueError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, "The task's files are saved.")
                return redirect_to(
                    request, reverse("rubrics:task_files", args=[access.repository.pk, task.pk])
                )
        status = 400
    context = {"access": access, "repository": access.repository, "task": task, "form": form}
    return render(request, "rubrics/task_files.html", context, status=status)

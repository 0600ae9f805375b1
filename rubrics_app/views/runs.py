"""Agent runs: the zip upload, the disagreement review queue, human verdicts, disputes and their dismissal.

Role rules (through the one access helper): maintainers import runs, dispute blockers and dismiss flags;
reviewers and maintainers label; viewers read; anyone without a role gets 404.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import (
    Http404,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseForbidden,
    HttpResponseRedirect,
)
from django.shortcuts import get_object_or_404, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from grading import SWE_BENCH_SOURCE, label_target_text
from rubrics_app.access import RepositoryAccess, get_repository_for_user
from rubrics_app.diff_render import render_diff
from rubrics_app.forms.runs import HumanVerdictForm, ReasonForm, RunsUploadForm, SweBenchUploadForm
from rubrics_app.models import (
    AgentRun,
    AgentRunDiff,
    Dispute,
    DisputeSource,
    EvidenceChange,
    ItemComment,
    ItemFlag,
    ItemKind,
    ItemVerdict,
    JudgeRole,
    QueueKind,
    Role,
    RubricItem,
    RunGrade,
    TransitionError,
)
from rubrics_app.services.reports.report import label_target, report_changed
from rubrics_app.services.rubrics import rereview
from rubrics_app.services.rubrics.files import ImportFailed
from rubrics_app.services.runs import audit_sample
from rubrics_app.services.runs import queue as review_queue
from rubrics_app.services.runs.pages import run_grades
from rubrics_app.services.runs.store import RunImport, import_runs_zip
from rubrics_app.services.runs.swe_bench import import_swe_bench_upload
from rubrics_app.views.common import (
    HtmxHttpRequest,
    page_number,
    page_size,
    refuse_control_characters,
    request_int,
    require_post,
)
from rubrics_app.views.kept_forms import form_key, redirect_with_form
from rubrics_app.views.repositories import repository_context
from rubrics_app.views.revisions import redirect_to


def _imported(
    request: HtmxHttpRequest, access: RepositoryAccess, what: str, result: RunImport
) -> HttpResponse:
    """Back to the repository page, at its Sweep button when new runs came in: imported runs are not
    graded by the repository's judges until a sweep grades them."""
    url = reverse("rubrics:repository_detail", args=[access.repository.pk])
    if not result.created:
        messages.success(request, f"{what}: {result.summary()}.")
        return redirect_to(request, url)
    count = len(result.created)
    messages.success(
        request,
        f"{what}: {result.summary()}. The new run{pluralize(count)} {'is' if count == 1 else 'are'} not "
        "graded yet by this repository's judges: Sweep (below) grades them.",
    )
    return redirect_to(request, f"{url}#sweeps")


@require_post("imports agent runs from a zip", back="rubrics:repository_detail")
@login_required
def runs_upload(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    """A zip of run directories; when any run has a problem nothing is imported, every problem listed."""
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    form = RunsUploadForm(request.POST, request.FILES)
    problems: list[str] = []
    if form.is_valid():
        try:
            result = import_runs_zip(access.repository, form.cleaned_data["file"], access)
        except ImportFailed as exc:
            problems = [str(problem) for problem in exc.problems]
        else:
            return _imported(request, access, "Runs", result)
    if request.htmx:
        context = {**repository_context(access), "runs_form": form, "runs_errors": problems}
        return render(request, "rubrics/repository_detail.html#runs-form", context)
    url = reverse("rubrics:repository_detail", args=[access.repository.pk]) + "#runs-form"
    return redirect_with_form(request, url, form_key("runs_upload", access.repository.pk), form, problems)


SHOWN_NOTES = 20  # a page's messages: the predictions not evaluated or not measured, the first ones


@require_post("imports SWE-bench predictions and reports", back="rubrics:repository_detail")
@login_required
def runs_upload_swe_bench(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    """The SWE-bench harness's predictions and reports; any bad line or report: nothing imported (the
    predictions the harness did not evaluate are left out, each named)."""
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    form = SweBenchUploadForm(request.POST, request.FILES)
    problems: list[str] = []
    if form.is_valid():
        try:
            result = import_swe_bench_upload(
                access.repository,
                form.cleaned_data["predictions"],
                form.cleaned_data["reports"],
                arm=form.cleaned_data["arm"],
                repetition=form.cleaned_data["repetition"],
                by=access,
            )
        except ImportFailed as exc:
            problems = [str(problem) for problem in exc.problems]
        else:
            notes = result.notes()
            for note in notes[:SHOWN_NOTES]:
                messages.warning(request, note)
            if len(notes) > SHOWN_NOTES:
                messages.warning(
                    request, f"and {len(notes) - SHOWN_NOTES} more (the command lists every one)"
                )
            return _imported(request, access, "SWE-bench runs", result)
    if request.htmx:
        context = {**repository_context(access), "swe_form": form, "swe_errors": problems}
        return render(request, "rubrics/repository_detail.html#swe-form", context)
    url = reverse("rubrics:repository_detail", args=[access.repository.pk]) + "#swe-form"
    key = form_key("runs_upload_swe_bench", access.repository.pk)
    return redirect_with_form(request, url, key, form, problems)


# --- the queue ---------------------------------------------------------------------------------------

# What the list shows: every pair (the default, for every role) or only the unlabelled ones.
SHOW_UNLABELLED = "unlabelled"
# The session key of the last label, which Undo takes back (services.runs.queue.LabelUndo).
UNDO_SESSION_KEY = "queue_undo"


def _queue_params(request: HtmxHttpRequest) -> tuple[str, dict[str, str]]:
    """The queue's kind and its filters (``show=unlabelled`` among them), from the query or the form."""
    kind = request.GET.get("kind") or request.POST.get("kind") or QueueKind.JUDGES
    if kind not in QueueKind.values:
        kind = QueueKind.JUDGES
    source = request.POST if request.method == "POST" else request.GET
    filters = {name: str(source.get(name, ""))[:200] for name in review_queue.FILTERS if source.get(name)}
    if request.method == "POST":  # the query string was checked by RequestTextMiddleware
        for name, value in filters.items():
            refuse_control_characters(value, f"form field {name!r}")
    if source.get("show") == SHOW_UNLABELLED:
        filters["show"] = SHOW_UNLABELLED
    return kind, filters


def _queue(access: RepositoryAccess, kind: str, filters: dict[str, str]) -> review_queue.Queue:
    narrowing = {name: value for name, value in filters.items() if name in review_queue.FILTERS}
    return review_queue.Queue(
        access.repository,
        kind,
        narrowing,
        unlabelled_only=filters.get("show") == SHOW_UNLABELLED,
        user_id=access.user.pk if access.user.is_authenticated else None,
    )


def _query(kind: str, filters: dict[str, str], page: int | None = None) -> str:
    return urlencode({"kind": kind, **filters, **({"page": page} if page and page > 1 else {})})


def _entry_url(
    access: RepositoryAccess, entry: review_queue.QueueEntry, kind: str, filters: dict[str, str]
) -> str:
    path = reverse("rubrics:queue_entry", args=[access.repository.pk, entry.grade_id, entry.item_id])
    return f"{path}?{_query(kind, filters)}"


def _list_url(access: RepositoryAccess, kind: str, filters: dict[str, str], page: int | None = None) -> str:
    return f"{reverse('rubrics:queue', args=[access.repository.pk])}?{_query(kind, filters, page)}"


def _pair_name(item_id: str, task_id: str, arm: str, model: str, repetition: int) -> str:
    return f"{item_id} on {task_id} ({arm or '-'} / {model or '-'} #{repetition})"


def _last_label(request: HtmxHttpRequest, access: RepositoryAccess) -> dict[str, Any] | None:
    """The "saved" notice with its Undo: the label this user gave last, while it is still theirs to take
    back (their most recent label in this repository, not labelled again since)."""
    if not access.can_comment:
        return None
    kept = request.session.get(UNDO_SESSION_KEY)
    if not isinstance(kept, dict) or kept.get("repository") != access.repository.pk:
        return None
    undo = review_queue.LabelUndo.from_session(kept.get("undo"))
    if undo is None:
        return None
    latest = review_queue.latest_label_of(access.repository, request.user.pk)
    if latest is None or (latest.item_id, latest.at) != (undo.item_id, undo.at):
        return None
    return {
        "grade_id": undo.grade_id,
        "item_id": undo.item_id,
        "verdict": latest.verdict,
        "pair": str(kept.get("pair", undo.item_id)),
        "replaced": undo.prior is not None,
    }


@require_GET
@login_required
def queue_list(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    """One page of the queue; the progress and the "next one" link are over the whole queue."""
    access = get_repository_for_user(request, repo_pk)
    kind, filters = _queue_params(request)
    queue = _queue(access, kind, filters)
    listed = queue.count()
    total = queue.total() if queue.unlabelled_only else listed
    reviewed = queue.reviewed_count()
    page = queue.page(page_number(request), page_size(), listed)
    next_entry = queue.first_unreviewed() if reviewed < total else None
    rows = [(e, _entry_url(access, e, kind, filters)) for e in page.entries]
    everything = {name: value for name, value in filters.items() if name != "show"}
    return render(
        request,
        "rubrics/queue.html",
        {
            "access": access,
            "repository": access.repository,
            "total": total,
            "listed": listed,
            "reviewed_count": reviewed,
            "remaining": total - reviewed,
            "page": page,
            "last_position": page.first_position + len(page.entries) - 1,
            "previous_page_url": _list_url(access, kind, filters, page.previous_number)
            if page.previous_number
            else None,
            "next_page_url": _list_url(access, kind, filters, page.next_number) if page.next_number else None,
            "rows": rows,
            "kind": kind,
            "kinds": QueueKind.choices,
            "filters": filters,
            "unlabelled_only": filters.get("show") == SHOW_UNLABELLED,
            "all_url": _list_url(access, kind, everything),
            "unlabelled_url": _list_url(access, kind, {**everything, "show": SHOW_UNLABELLED}),
            "choices": {
                **review_queue.filter_choices(access.repository),
                "pattern": list(review_queue.PATTERNS),
                "human": list(review_queue.HUMAN_FILTERS),
            },
            "next_url": _entry_url(access, next_entry, kind, filters) if next_entry else None,
            "sample_percent": _sample_percent(),
            "label_target": _label_target(access),
            "last_label": _last_label(request, access),
            "undo_query": filters,
            "agreement": review_queue.human_agreement(access.repository),
            "contested_count": len(review_queue.adjudication_list(access.repository)),
            "audit": audit_sample.summary(access.repository) if kind == QueueKind.AUDIT else None,
        },
    )


def _label_target(access: RepositoryAccess) -> str | None:
    """The queue's target: how many runs count for the judge-error correction now (every blocker the judge
    decided has a settled label, from any queue), and how many more labelled runs would bring the
    corrected mergeable rate of the whole report to ±5 points (grading.report.power)."""
    target = label_target(access.repository)
    if target is None:
        return None  # nothing measured: no rate to correct
    counting = f"{target.labelled} run{pluralize(target.labelled)} count for the corrected rate now. "
    return counting + label_target_text(target.more_labels, target.target, target.reason)


def _grade_rows(grade: RunGrade) -> list[dict[str, Any]]:
    """One row per item a judge gave a verdict on, beside that item's text in the revision the grade was
    graded against (none when that rubric is not in the app)."""
    items = {item.item_id: item for item in grade.revision.items.all()} if grade.revision else {}
    rows: dict[str, dict[str, Any]] = {}
    for judge in grade.judges.all():
        for verdict in judge.verdicts.all():
            row = rows.setdefault(
                verdict.item_id, {"item_id": verdict.item_id, "item": items.get(verdict.item_id)}
            )
            row[judge.role] = verdict
    return [rows[item_id] for item_id in sorted(rows)]


@require_GET
@login_required
def run_detail(request: HtmxHttpRequest, repo_pk: int, run_pk: int) -> HttpResponse:
    """One run: its current grade, then its older grades as history, each beside the rubric text it was
    graded against."""
    access = get_repository_for_user(request, repo_pk)
    run = get_object_or_404(
        AgentRun.objects.select_related("task").defer("grade_json"),
        task__repository=access.repository,
        pk=run_pk,
    )
    all_grades = run_grades(run)
    grades = [
        {"grade": grade, "rows": _grade_rows(grade), "not_measured": _integrity_not_measured(grade)}
        for grade in all_grades
    ]
    # The diff, with the lines each judge of the current grade cited marked as the queue marks them.
    cited: dict[tuple[str, str, int], list[str]] = {}
    if all_grades:
        for verdict in ItemVerdict.objects.filter(judge__grade=all_grades[0]).select_related("judge"):
            for key, roles in _cited({verdict.judge.role: verdict}).items():
                cited.setdefault(key, [])
                cited[key] += [r for r in roles if r not in cited[key]]
    diff = AgentRunDiff.objects.filter(run=run).values_list("content", flat=True).first()
    return render(
        request,
        "rubrics/run_detail.html",
        {
            "access": access,
            "repository": access.repository,
            "run": run,
            "from_swe_bench": run.run_json.get("source") == SWE_BENCH_SOURCE,
            "current": grades[0] if grades else None,
            "history": grades[1:],
            "diff_html": render_diff(bytes(diff) if diff is not None else None, cited=cited),
        },
    )


def _integrity_not_measured(grade: RunGrade) -> list[tuple[str, str]]:
    """The test-integrity parts the grade could not measure, each with why (metrics.json's
    details.integrity.not_measured, as the grader wrote it)."""
    integrity = (grade.metrics.get("details") or {}).get("integrity") or {}
    not_measured = integrity.get("not_measured") or {}
    if not isinstance(not_measured, dict):
        return []
    return sorted((str(part), str(why)) for part, why in not_measured.items())


def _sample_percent() -> int:
    from django.conf import settings

    return int(settings.RUNS_AGREED_SAMPLE_PERCENT)


def _load_grade(access: RepositoryAccess, grade_pk: int) -> RunGrade:
    return get_object_or_404(
        RunGrade.objects.select_related("run", "run__task", "revision"),
        run__task__repository=access.repository,
        pk=grade_pk,
    )


def _cited(verdicts: dict[str, ItemVerdict | None]) -> dict[tuple[str, str, int], list[str]]:
    marks: dict[tuple[str, str, int], list[str]] = {}
    for role, verdict in verdicts.items():
        for location in (verdict.locations if verdict else []) or []:
            if isinstance(location, dict) and isinstance(location.get("line"), int):
                key = (str(location.get("file", "")), str(location.get("side", "new")), location["line"])
                marks.setdefault(key, []).append(role)
    return marks


def _entry_context(
    request: HtmxHttpRequest, access: RepositoryAccess, grade: RunGrade, item_id: str
) -> dict[str, Any]:
    by_role: dict[str, ItemVerdict | None] = {JudgeRole.PRIMARY: None, JudgeRole.SECOND: None}
    for verdict in ItemVerdict.objects.filter(judge__grade=grade, item_id=item_id).select_related("judge"):
        by_role[verdict.judge.role] = verdict
    if all(v is None for v in by_role.values()):
        raise Http404("no such item in this grade")
    kind, filters = _queue_params(request)
    queue = _queue(access, kind, filters)
    location = queue.locate(grade.pk, item_id)
    # Back to the list at the page that holds this pair.
    page = None if location.position is None else (location.position - 1) // page_size() + 1
    diff = AgentRunDiff.objects.filter(run=grade.run).values_list("content", flat=True).first()
    item, exact = review_queue.rubric_item_for(grade, item_id)
    standing = list(review_queue.standing_labels(grade, item_id))
    user_id = request.user.pk
    own = next((h for h in standing if h.by_id == user_id and not h.adjudicated), None)
    ruling = next((h for h in standing if h.adjudicated), None)
    human = ruling or own or (standing[0] if standing else None)
    can_dispute = access.can_edit and item is not None and item.kind == ItemKind.BLOCKER
    total, reviewed = queue.total(), queue.reviewed_count()
    next_unlabelled = queue.first_unreviewed(after=location) if reviewed < total else None
    return {
        "access": access,
        "repository": access.repository,
        "grade": grade,
        "run": grade.run,
        "item_id": item_id,
        "item": item,
        "item_exact": exact,
        "primary": by_role[JudgeRole.PRIMARY],
        "second": by_role[JudgeRole.SECOND],
        "diff_html": render_diff(bytes(diff) if diff is not None else None, cited=_cited(by_role)),
        "human": human,
        "own": own,
        "labels": standing,
        "earlier_labels": list(review_queue.earlier_labels(grade, item_id)),
        "contested": ruling is None and len({h.verdict for h in standing}) > 1,
        "can_adjudicate": access.can_edit,
        "form": HumanVerdictForm(initial={"verdict": own.verdict, "note": own.note} if own else None),
        "dispute_form": ReasonForm() if can_dispute else None,
        "flag_form": ReasonForm()
        if access.can_comment and item is not None and item.kind == ItemKind.BLOCKER and exact
        else None,
        "kind": kind,
        "kind_label": QueueKind(kind).label,
        "filters": filters,
        "unlabelled_only": filters.get("show") == SHOW_UNLABELLED,
        "query": _query(kind, filters, page),
        "total": total,
        "listed": queue.count() if queue.unlabelled_only else total,
        "reviewed_count": reviewed,
        "remaining": total - reviewed,
        "position": location.position,
        "previous_url": _entry_url(access, location.previous, kind, filters) if location.previous else None,
        "next_url": _entry_url(access, location.following, kind, filters) if location.following else None,
        "next_unlabelled_url": _entry_url(access, next_unlabelled, kind, filters)
        if next_unlabelled
        else None,
        "last_label": _last_label(request, access),
        "undo_query": filters,
    }


@require_GET
@login_required
def queue_entry(request: HtmxHttpRequest, repo_pk: int, grade_pk: int, item_id: str) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk)
    grade = _load_grade(access, grade_pk)
    return render(request, "rubrics/queue_entry.html", _entry_context(request, access, grade, item_id))


@require_post("records a reviewer's verdict on a pair of the review queue", back="rubrics:queue_entry")
@login_required
def queue_label(request: HtmxHttpRequest, repo_pk: int, grade_pk: int, item_id: str) -> HttpResponse:
    """Record the human verdict and move on to the next pair of the same queue (one keystroke per pair);
    the next page says what was saved, with an Undo."""
    access = get_repository_for_user(request, repo_pk, role=Role.REVIEWER)
    grade = _load_grade(access, grade_pk)
    if not ItemVerdict.objects.filter(judge__grade=grade, item_id=item_id).exists():
        raise Http404("no such item in this grade")
    if len(request.POST.getlist("verdict")) > 1:
        return HttpResponseBadRequest("one verdict per label", content_type="text/plain")
    form = HumanVerdictForm(request.POST)
    kind, filters = _queue_params(request)
    if not form.is_valid():
        context = _entry_context(request, access, grade, item_id)
        context["form"] = form
        return render(request, "rubrics/queue_entry.html", context, status=400)
    adjudicate = request.POST.get("adjudicate") == "1"
    if adjudicate and not access.can_edit:
        return HttpResponseForbidden("only a maintainer adjudicates", content_type="text/plain")
    labelled = review_queue.label(
        grade,
        item_id,
        form.cleaned_data["verdict"],
        form.cleaned_data["note"],
        kind,
        access,
        adjudicate=adjudicate,
    )
    report_changed(access.repository.pk)  # a label changes the report: a worker computes it before it is read
    run = grade.run
    request.session[UNDO_SESSION_KEY] = {
        "repository": access.repository.pk,
        "undo": labelled.undo.to_session(),
        "pair": _pair_name(item_id, run.task.task_id, run.arm, run.model, run.repetition),
    }
    queue = _queue(access, kind, filters)
    location = queue.locate(grade.pk, item_id)
    if location.following is not None:
        return HttpResponseRedirect(_entry_url(access, location.following, kind, filters))
    reviewed, total = queue.reviewed_count(), queue.total()
    first = queue.first_unreviewed() if reviewed < total else None
    if first is not None:
        # The end of the list is not the end of the work: go back to the first pair still unlabelled.
        remaining = total - reviewed
        messages.info(
            request,
            f"{reviewed} of {total} reviewed: the end of the list, with {remaining} "
            f"pair{pluralize(remaining)} still unlabelled. This is the first of them.",
        )
        return HttpResponseRedirect(_entry_url(access, first, kind, filters))
    messages.success(request, f"{reviewed} of {total} reviewed: the end of this queue.")
    return HttpResponseRedirect(_list_url(access, kind, filters))


@require_post("takes back the last label you gave in the review queue", back="rubrics:queue")
@login_required
def queue_undo(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    """Take back the label this user gave last (the form names its pair), and go back to that pair. Only
    one's own most recent label, and only while nobody labelled the pair again."""
    access = get_repository_for_user(request, repo_pk, role=Role.REVIEWER)
    kind, filters = _queue_params(request)
    kept = request.session.get(UNDO_SESSION_KEY)
    undo = (
        review_queue.LabelUndo.from_session(kept.get("undo"))
        if isinstance(kept, dict) and kept.get("repository") == access.repository.pk
        else None
    )
    named = (request_int(request.POST.get("undo_grade")), str(request.POST.get("undo_item", "")))
    if undo is None or (undo.grade_id, undo.item_id) != named:
        messages.error(request, "Nothing to undo: that is not the last label you gave here.")
        return HttpResponseRedirect(_list_url(access, kind, filters))
    grade = _load_grade(access, undo.grade_id)
    pair = str(kept.get("pair", undo.item_id)) if isinstance(kept, dict) else undo.item_id
    path = reverse("rubrics:queue_entry", args=[access.repository.pk, grade.pk, undo.item_id])
    back = f"{path}?{_query(kind, filters)}"
    try:
        restored = review_queue.undo_label(grade, undo, access)
    except review_queue.NothingToUndo as exc:
        request.session.pop(UNDO_SESSION_KEY, None)
        messages.error(request, f"Nothing undone: {exc}.")
        return HttpResponseRedirect(back)
    request.session.pop(UNDO_SESSION_KEY, None)
    report_changed(access.repository.pk)
    if restored is None:
        messages.success(request, f"Undone: {pair} is unlabelled again.")
    else:
        who = f" by {restored.by}" if restored.by else ""
        messages.success(
            request, f"Undone: {pair} is back to {restored.verdict}{who}, the label it replaced."
        )
    return HttpResponseRedirect(back)


# --- disputes and re-review ------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@login_required
def item_dispute(request: HtmxHttpRequest, repo_pk: int, item_pk: int) -> HttpResponse:
    """Dispute a blocker, from the item itself, from one of its comments (?comment=) or from a queue entry
    (?grade=)."""
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    item = get_object_or_404(
        RubricItem.objects.select_related("revision", "revision__task"),
        revision__task__repository=access.repository,
        pk=item_pk,
    )
    source_params = request.POST if request.method == "POST" else request.GET
    comment = grade = None
    if (comment_pk := request_int(source_params.get("comment"))) is not None:
        comment = ItemComment.objects.filter(item=item, pk=comment_pk).first()
    if (grade_pk := request_int(source_params.get("grade"))) is not None:
        grade = RunGrade.objects.filter(run__task__repository=access.repository, pk=grade_pk).first()
    flag = None
    if (flag_pk := request_int(source_params.get("flag"))) is not None:
        flag = ItemFlag.objects.filter(item=item, pk=flag_pk, dispute=None).select_related("grade").first()
    initial = comment.text if comment else flag.reason if flag else ""
    form = ReasonForm(request.POST or None, initial={"reason": initial})
    error = ""
    if request.method == "POST" and form.is_valid():
        source = (
            DisputeSource.DISAGREEMENT if grade else DisputeSource.COMMENT if comment else DisputeSource.ITEM
        )
        try:
            if flag is not None:
                rereview.dispute_from_flag(flag, access, form.cleaned_data["reason"])
            else:
                rereview.open_dispute(item, access, form.cleaned_data["reason"], source, grade)
        except TransitionError as exc:
            error = str(exc)
        else:
            messages.success(
                request, f"{item.item_id} is disputed: revision {item.revision.number} needs re-review."
            )
            task = item.revision.task
            return redirect_to(request, reverse("rubrics:task_detail", args=[access.repository.pk, task.pk]))
    return render(
        request,
        "rubrics/dispute_form.html",
        {
            "access": access,
            "repository": access.repository,
            "item": item,
            "form": form,
            "comment": comment,
            "grade": grade,
            "flag": flag,
            "error": error,
        },
        status=400 if request.method == "POST" else 200,
    )


@require_post("dismisses a dispute or an evidence change", back="rubrics:repository_detail")
@login_required
def flag_dismiss(request: HtmxHttpRequest, repo_pk: int, what: str, pk: int) -> HttpResponse:
    """Dismiss a dispute or an evidence change, with a reason."""
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    flag: Dispute | EvidenceChange
    if what == "dispute":
        flag = get_object_or_404(
            Dispute.objects.select_related("revision"), revision__task__repository=access.repository, pk=pk
        )
    elif what == "evidence":
        flag = get_object_or_404(
            EvidenceChange.objects.select_related("revision"),
            revision__task__repository=access.repository,
            pk=pk,
        )
    else:
        raise Http404("no such flag")
    form = ReasonForm(request.POST)
    task_url = reverse("rubrics:task_detail", args=[access.repository.pk, flag.revision.task_id])
    if not form.is_valid():
        messages.error(request, "Nothing dismissed: say why.")
        return redirect_to(request, task_url)
    try:
        if isinstance(flag, Dispute):
            rereview.dismiss_dispute(flag, access, form.cleaned_data["reason"])
        else:
            rereview.dismiss_evidence_change(flag, access, form.cleaned_data["reason"])
    except TransitionError as exc:
        messages.error(request, str(exc))
    return redirect_to(request, task_url)


@require_post("flags a blocker from a pair of the review queue", back="rubrics:queue_entry")
@login_required
def queue_flag(request: HtmxHttpRequest, repo_pk: int, grade_pk: int, item_id: str) -> HttpResponse:
    """A reviewer flags the pair's blocker as wrong, with a reason: maintainers see it on the revision."""
    access = get_repository_for_user(request, repo_pk, role=Role.REVIEWER)
    grade = _load_grade(access, grade_pk)
    item, exact = review_queue.rubric_item_for(grade, item_id)
    kind, filters = _queue_params(request)
    back = (
        reverse("rubrics:queue_entry", args=[access.repository.pk, grade.pk, item_id])
        + "?"
        + _query(kind, filters)
    )
    form = ReasonForm(request.POST)
    if item is None or not exact:
        raise Http404("no such item in the rubric this run was graded against")
    if not form.is_valid():
        messages.error(request, "A flag says why the criterion is wrong.")
        return HttpResponseRedirect(back)
    try:
        rereview.flag_blocker(item, grade, form.cleaned_data["reason"], access)
    except TransitionError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"{item_id} flagged: the maintainers see it on revision r{item.revision.number}."
        )
    return HttpResponseRedirect(back)

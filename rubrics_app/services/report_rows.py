"""The report's precomputed rows (``ReportRow``): one per grade, holding what ``grading.report`` reads of it.

:func:`refresh_report_rows` is the one function that writes them, and the one grade writer
(``services.runs.store.writing_grades``, which the run import and sweeps write every grade through) is the one
caller, in the grade's transaction, with the ids of the grades it wrote.
It is idempotent (a grade's row is rewritten from its rows) and costs a fixed number of queries per 500
grades, whatever the number of judges and verdicts. It also keeps ``latest`` set on the newest grade of
each run it touches (the report takes each run's current grade, ``RunGrade.objects.current()``).

It writes the grades' review queue pairs too (``QueuePair``, :func:`fill_queue_pairs`): the queue reads them
instead of joining the item verdicts with themselves.

The migrations that created the tables fill them with the same code over the historical models
(:func:`fill_report_rows`, :func:`fill_queue_pairs`).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.db.models import Max
from pydantic import ValidationError

from grading import MetricsDetails, MetricsJudge, grade_metrics
from rubrics_app.models import (
    ItemVerdict,
    JudgeGrade,
    JudgeRole,
    QueueKind,
    QueuePair,
    ReportRow,
    ReportVerdicts,
    RunGrade,
)
from rubrics_app.services.runs.queue import human_label_basis

CHUNK = 500  # grades per round of queries: bounds memory (each grade's metrics.json details are read)
PAIR_CHUNK = 2000  # grades per round of the queue pairs' queries (a few small columns each)


class RowModels(NamedTuple):
    """The model classes the rows are filled from: the app's, or a migration's historical ones."""

    grade: Any
    judge: Any
    verdict: Any
    row: Any
    pair: Any = None  # QueuePair; None before the migration that added it
    verdicts: Any = None  # ReportVerdicts; None before the migration that added it

    @classmethod
    def of(cls, apps: Any, *, pairs: bool = False, verdicts: bool = False) -> RowModels:
        """A migration's historical models (``apps``), with QueuePair and ReportVerdicts where asked."""
        model = functools.partial(apps.get_model, "rubrics_app")
        return cls(
            model("RunGrade"),
            model("JudgeGrade"),
            model("ItemVerdict"),
            model("ReportRow"),
            model("QueuePair") if pairs else None,
            model("ReportVerdicts") if verdicts else None,
        )


APP_MODELS = RowModels(RunGrade, JudgeGrade, ItemVerdict, ReportRow, QueuePair, ReportVerdicts)


def refresh_report_rows(grade_pks: Iterable[int]) -> int:
    """Write (or rewrite) the report rows of these grades, the ``latest`` flag of their runs' rows and the
    grades' review queue pairs. Returns how many grades were filled."""
    pks = sorted(set(grade_pks))
    fill_queue_pairs(pks, APP_MODELS)
    return fill_report_rows(pks, APP_MODELS)


def fill_report_rows(grade_pks: Iterable[int], models: RowModels) -> int:
    pks = sorted(set(grade_pks))
    for start in range(0, len(pks), CHUNK):
        _fill(pks[start : start + CHUNK], models)
    return len(pks)


def report_metrics(grade_json: Any) -> dict[str, float | bool]:
    """grade.json's metrics as a report reads them (grading.report.grade_metrics): finite numbers, which it
    averages per cell, and true/false values, a rate per cell; kept as one object, which the report splits
    again by type. metrics.json holds the same (the import checks that they are equal)."""
    if not isinstance(grade_json, dict):
        return {}
    numeric, flags = grade_metrics(grade_json)
    return {**numeric, **flags}


def stored_details(details: Any) -> MetricsDetails | None:
    """A grade's stored metrics.json details as ``rubric report`` reads them (grading.MetricsDetails); None
    when they do not read (checked when imported: details written some other way must not stop the rest)."""
    try:
        return MetricsDetails.model_validate(details)
    except ValidationError:
        return None


def integrity_not_measured(details: MetricsDetails | None) -> list[str]:
    """metrics.json's details.integrity_not_measured: the test-integrity parts not measured (names only)."""
    return sorted(set(details.integrity_not_measured)) if details is not None else []


def gate_passed(status: str, judge_skipped: Any) -> bool | None:
    """Whether the run passed the test gate, as ``grading.report_files`` reads metrics.json: the judge runs
    only when the gate held, so a not-mergeable run on which the judge was skipped failed it."""
    if status in ("mergeable", "judge_failure"):
        return True
    if status == "not_mergeable":
        return judge_skipped is None
    return None


def _json(value: Any) -> str:
    # Sorted keys, no spaces: equal values give equal texts, which the report decodes once.
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _judges(pks: list[int], models: RowModels) -> dict[int, dict[str, dict[str, Any]]]:
    judges: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
    by_pk: dict[int, dict[str, Any]] = {}
    for pk, grade_id, role, spec, scripted, failure, bypass in models.judge.objects.filter(
        grade_id__in=pks
    ).values_list("pk", "grade_id", "role", "judge", "scripted", "failure", "cache_bypass"):
        entry: dict[str, Any] = {
            "judge": spec,
            "scripted": scripted,
            "failure": failure or None,
            "bypass": bool(bypass),
            "blockers": {},
            "non_blockers": {},
            "previous": {},
        }
        judges[grade_id][role] = entry
        by_pk[pk] = entry
    for judge_id, item_id, kind, verdict, previous in (
        models.verdict.objects.filter(judge__grade_id__in=pks)
        .order_by("judge_id", "item_id")
        .values_list("judge_id", "item_id", "kind", "verdict", "previous_verdict")
    ):
        target = by_pk[judge_id]
        target["blockers" if kind == "blocker" else "non_blockers"][item_id] = verdict
        if previous:
            target["previous"][item_id] = previous
    return judges


def _verdicts(
    entry: dict[str, Any] | None, family: str | None, record: MetricsJudge | None, costs: bool = True
) -> dict[str, Any] | None:
    """The fields of grading.report.JudgeVerdicts: the verdicts from the judge's rows, `previous` only on a
    deliberate regrade (a cache bypass); the tree-judged blockers and the costs from the judge's record in
    metrics.json (``record``), read as ``rubric report`` reads them (grading.report_files). Without
    ``costs``, the costs are left out (the row holds them in columns of their own: :func:`_costs`)."""
    if entry is None:
        return None
    verdicts = {
        "judge": entry["judge"],
        "family": family,
        "scripted": entry["scripted"],
        "failure": entry["failure"],
        "blockers": entry["blockers"],
        "non_blockers": entry["non_blockers"],
        "previous": entry["previous"] if entry["bypass"] and entry["previous"] else None,
        "tree_judged": [v.item_id for v in record.verdicts if v.tree_judged] if record is not None else [],
        "cost_usd": float(record.usage.cost_usd) if record is not None else 0.0,
        "tree_cost_usd": float(record.tree_usage.cost_usd) if record is not None else 0.0,
        "cost_known": record is None or (record.usage.cost_known and record.tree_usage.cost_known),
    }
    if not costs:
        del verdicts["cost_usd"], verdicts["tree_cost_usd"]
    return verdicts


def _costs(entry: dict[str, Any] | None, record: MetricsJudge | None) -> tuple[float, float]:
    """A judge's (cost_usd, tree_cost_usd) on the run, as :func:`_verdicts` reads them; 0 when it did not
    run."""
    if entry is None or record is None:
        return 0.0, 0.0
    return float(record.usage.cost_usd), float(record.tree_usage.cost_usd)


def _verdict_texts(primary: str, second: str, texts: list[tuple[str, str]] | None) -> dict[str, str]:
    """A row's verdict fields: the texts themselves where rows hold them (``texts`` None, before
    ReportVerdicts), else none, with the pair appended to ``texts`` for :func:`verdict_ids`."""
    if texts is None:
        return {"primary": primary, "second": second}
    texts.append((primary, second))
    return {}


def verdicts_digest(primary: str, second: str) -> str:
    """What finds a pair of verdict texts in ReportVerdicts (JSON texts hold no raw newline)."""
    return hashlib.sha256(f"{primary}\n{second}".encode()).hexdigest()


def verdict_ids(pairs: Iterable[tuple[str, str]], model: Any) -> dict[tuple[str, str], int]:
    """The ReportVerdicts id of each (primary, second) pair of texts, writing those not stored yet: two
    queries whatever the number (three when some are new). A pair written by another transaction at the
    same moment is read back, not written twice (the digest is unique)."""
    by_digest = {verdicts_digest(*pair): pair for pair in set(pairs)}
    found = dict(model.objects.filter(digest__in=by_digest).values_list("digest", "pk"))
    missing = [model(digest=d, primary=p, second=s) for d, (p, s) in by_digest.items() if d not in found]
    if missing:
        model.objects.bulk_create(missing, ignore_conflicts=True)
        found = dict(model.objects.filter(digest__in=by_digest).values_list("digest", "pk"))
    return {pair: found[digest] for digest, pair in by_digest.items()}


_GRADE_FIELDS = (
    "pk",
    "run_id",
    "run__task_id",
    "run__task__repository_id",
    "run__task__task_id",
    "run__arm",
    "run__model",
    "run__prompt_style",
    "run__source",
    "run__repetition",
    "run__grade_json",
    "revision_id",
    "status",
    "mergeable",
    "merge_score",
    "provisional",
    "metrics__details",  # only the details of metrics.json, not the whole copy
    "is_current",  # read only where the row has the column (see _fill)
)


def _fill(pks: list[int], models: RowModels) -> None:
    columns = _Columns.of(models)
    texts: list[tuple[str, str]] = []
    fields = _GRADE_FIELDS if columns.current else _GRADE_FIELDS[:-1]
    grades = [dict(zip(fields, values, strict=True)) for values in
              models.grade.objects.filter(pk__in=pks).values_list(*fields)]  # fmt: skip
    judges = _judges(pks, models)
    rows = [
        _report_row(g, judges.get(g["pk"], {}), models, columns, texts if columns.verdicts else None)
        for g in grades
    ]
    if columns.verdicts:
        ids = verdict_ids(texts, models.verdicts)
        for row, pair in zip(rows, texts, strict=True):
            row.verdicts_id = ids[pair]
    models.row.objects.filter(grade_id__in=pks).delete()
    models.row.objects.bulk_create(rows)
    _mark_latest(sorted({g["run_id"] for g in grades}), models)


@dataclass(frozen=True)
class _Columns:
    """The row model's columns that came later: the migrations that added them fill them, and an earlier
    migration's rows have no such fields."""

    integrity: bool
    current: bool
    # With ReportVerdicts (migration 0136), the verdicts go there and each judge's costs in the row's own
    # columns; before (an earlier migration's fill, or 0136 undone), each row holds both judges' texts,
    # costs included.
    verdicts: bool

    @classmethod
    def of(cls, models: RowModels) -> _Columns:
        names = {f.name for f in models.row._meta.get_fields()}
        return cls("integrity_not_measured" in names, "current" in names, models.verdicts is not None)


def _report_row(
    g: dict[str, Any],
    judged: dict[str, dict[str, Any]],
    models: RowModels,
    columns: _Columns,
    texts: list[tuple[str, str]] | None,
) -> Any:
    """The report row of one grade (``g``, its _GRADE_FIELDS) with its judges' entries (``judged``); its
    verdict pair appended to ``texts`` where the verdicts are rows of their own."""
    details = g["metrics__details"]
    d = stored_details(details)
    in_scope = d.scope.in_scope if d is not None and d.scope is not None else None
    integrity_ok = d.integrity.ok if d is not None and d.integrity is not None else None
    families = d.judge_families if d is not None else None
    try:
        basis = human_label_basis(g["status"], details)
    except ValidationError:
        # Checked when it was imported; details written some other way that do not read cannot
        # give a human verdict, and must not stop the rest (the migration fills every stored grade).
        basis = None
    extra: dict[str, Any] = (
        {"integrity_not_measured": _json(integrity_not_measured(d))} if columns.integrity else {}
    )
    if columns.current:
        extra["current"] = g["is_current"]
    primary = judged.get(JudgeRole.PRIMARY), families.primary if families is not None else None
    second = judged.get(JudgeRole.SECOND), families.second if families is not None else None
    primary_record = d.judge if d is not None else None
    second_record = d.second_judge if d is not None else None
    if columns.verdicts:
        extra["primary_cost"], extra["primary_tree_cost"] = _costs(primary[0], primary_record)
        extra["second_cost"], extra["second_tree_cost"] = _costs(second[0], second_record)
    return models.row(
        **extra,
        grade_id=g["pk"],
        run_id=g["run_id"],
        task_id=g["run__task_id"],
        repository_id=g["run__task__repository_id"],
        revision_id=g["revision_id"],
        name=g["run__source"]
        or f"{g['run__task__task_id']}/{g['run__arm']}/{g['run__model']}/{g['run__repetition']}",
        arm=g["run__arm"],
        model=g["run__model"],
        prompt_style=g["run__prompt_style"],
        status=g["status"],
        test_pass=gate_passed(g["status"], d.judge_skipped if d is not None else None),
        mergeable=g["mergeable"],
        merge_score=g["merge_score"],
        checks_passed=None
        if in_scope is None or integrity_ok is None
        else bool(in_scope) and bool(integrity_ok),
        provisional=g["provisional"],
        metrics=_json(report_metrics(g["run__grade_json"])),
        **_verdict_texts(
            _json(_verdicts(*primary, primary_record, costs=not columns.verdicts)),
            _json(_verdicts(*second, second_record, costs=not columns.verdicts)),
            texts,
        ),
        human_items=_json(None if basis is None else basis[0]),
        human_checks=basis is not None and basis[1],
    )


def _mark_latest(runs: list[int], models: RowModels) -> None:
    """The rows of the newest grade of each of ``runs`` marked latest, and only those."""
    newest = models.grade.objects.filter(run_id__in=runs).values("run_id").annotate(newest=Max("pk"))
    models.row.objects.filter(run_id__in=runs, latest=True).exclude(
        grade_id__in=newest.values("newest")
    ).update(latest=False)
    models.row.objects.filter(grade_id__in=newest.values("newest"), latest=False).update(latest=True)


# --- the review queue's pairs ---------------------------------------------------------------------------

_PAIR_GRADE_FIELDS = (
    "pk",
    "run__task__repository_id",
    "run__task__task_id",
    "run__arm",
    "run__model",
    "run__repetition",
    "is_current",
    "revision_id",
)


def fill_queue_pairs(grade_pks: Iterable[int], models: RowModels) -> int:
    """Write (or rewrite) the review queue pairs (``QueuePair``) of these grades from their item verdicts:
    two reads and one insert per 2,000 grades. Returns how many pairs were written."""
    pks = sorted(set(grade_pks))
    written = 0
    for start in range(0, len(pks), PAIR_CHUNK):
        written += _fill_pairs(pks[start : start + PAIR_CHUNK], models)
    return written


def pair_kinds(primary: tuple[str, str] | None, second: tuple[str, str] | None) -> list[str]:
    """The kinds of queue a (grade, item) pair is in, from each judge's (verdict, previous verdict) on it
    (None: that judge gave none): ``judges`` or ``agreed`` when both judges gave one, else ``""`` (in no
    queue); and ``regrade`` besides when either judge's regrade differs from what its cache held."""
    if primary is not None and second is not None:
        kinds = [QueueKind.JUDGES.value if primary[0] != second[0] else QueueKind.AGREED.value]
    else:
        kinds = [""]
    if any(v is not None and v[1] and v[1] != v[0] for v in (primary, second)):
        kinds.append(QueueKind.REGRADE.value)
    return kinds


def _told(verdict: tuple[str, str, float] | None) -> tuple[str, str] | None:
    return None if verdict is None else (verdict[0], verdict[1])


def _fill_pairs(pks: list[int], models: RowModels) -> int:
    grades = {
        values[0]: values
        for values in models.grade.objects.filter(pk__in=pks).values_list(*_PAIR_GRADE_FIELDS)
    }
    # (grade, item) -> role -> (verdict, previous verdict, sample key)
    verdicts: dict[tuple[int, str], dict[str, tuple[str, str, float]]] = defaultdict(dict)
    for grade_id, role, item_id, verdict, previous, sample_key in (
        models.verdict.objects.filter(judge__grade_id__in=pks)
        .order_by("judge__grade_id", "item_id", "judge__role")
        .values_list("judge__grade_id", "judge__role", "item_id", "verdict", "previous_verdict", "sample_key")
    ):
        verdicts[(grade_id, item_id)][role] = (verdict, previous, sample_key)
    # The criterion each pair was graded against (the labels that stand for it are for that wording): only
    # where the model has the column (a migration before it fills pairs without).
    wordings: dict[tuple[int, str], str] = {}
    if any(field.name == "criterion_sha256" for field in models.pair._meta.fields):
        revisions = {values[-1] for values in grades.values() if values[-1] is not None}
        item = models.grade._meta.get_field("revision").related_model._meta.get_field("items").related_model
        for revision_id, item_id, criterion in item.objects.filter(revision_id__in=revisions).values_list(
            "revision_id", "item_id", "criterion"
        ):
            wordings[(revision_id, item_id)] = hashlib.sha256(criterion.encode()).hexdigest()
    pairs = []
    for (grade_id, item_id), by_role in verdicts.items():
        _, repository_id, task_id, arm, model, repetition, current, revision_id = grades[grade_id]
        wording = {} if not wordings else {"criterion_sha256": wordings.get((revision_id, item_id), "")}
        primary, second = by_role.get(JudgeRole.PRIMARY), by_role.get(JudgeRole.SECOND)
        for kind in pair_kinds(_told(primary), _told(second)):
            pairs.append(
                models.pair(
                    grade_id=grade_id,
                    repository_id=repository_id,
                    item_id=item_id,
                    kind=kind,
                    current=current,
                    task_id=task_id,
                    arm=arm,
                    model=model,
                    repetition=repetition,
                    sample_key=primary[2] if primary is not None else 0.0,
                    **wording,
                )
            )
    models.pair.objects.filter(grade_id__in=pks).delete()
    models.pair.objects.bulk_create(pairs, batch_size=5000)
    return len(pairs)

"""The report's runs and items as rows (§7 "per-run and per-item rows"): one :class:`RunRow` per run, one
:class:`ItemRow` per run × item × judge, and their CSV and JSONL files. One definition of the columns for
``rubric report --runs-out/--items-out`` (from run folders) and the web app's downloads (from its rows):
both build a :class:`GradedRun` (what the report counts) and hand it here with the run's metrics.json
details, so a row says exactly what the report read of its run.

Every file starts with its provenance (grading.report.provenance): the CSV's first line is a comment
``# provenance {...}``, the JSONL's first line is ``{"provenance": {...}}``; the rows follow.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel

from grading.checks.outcome import OutcomeStatus, RunDetails
from grading.judge.models import JudgeResult, Location, Usage
from grading.report.models import GradedRun
from grading.report.provenance import Provenance

RowFormat = Literal["csv", "jsonl"]


class RunRow(BaseModel):
    """One run as the report counts it. ``measured``: in the rates (mergeable decided and the test outcome
    known); ``excluded`` says why not (the status and its first reason)."""

    run: str
    task: str
    arm: str
    model: str
    repetition: int | None
    prompt_style: str | None
    status: OutcomeStatus
    test_pass: bool | None
    mergeable: bool | None
    merge_score: float | None
    measured: bool
    excluded: str | None
    provisional: bool | None
    rubric_revision: int | None  # the revision's number (the app); None from run folders
    rubric_sha256: str | None
    primary_judge: str | None
    primary_model_id: str | None
    second_judge: str | None
    second_model_id: str | None
    cost_usd: float  # both judges, the tree judge included
    cost_known: bool
    input_tokens: int  # cache reads and writes included
    output_tokens: int
    human_mergeable: bool | None


class ItemRow(BaseModel):
    """One judge's verdict on one item of one run, and the human label of the item where there is one."""

    run: str
    task: str
    arm: str
    model: str
    repetition: int | None
    role: Literal["primary", "second"]
    judge: str
    model_id: str | None
    item_id: str
    kind: str
    verdict: str
    finding: str | None
    reason: str
    cited_lines: list[Location]
    tree_judged: bool
    human_label: str | None


def _excluded(run: GradedRun, details: RunDetails | None) -> str | None:
    if run.measured:
        return None
    why = next(iter(details.reasons), None) if details is not None else None
    if why is None and details is not None and run.status == "judge_failure":
        why = (details.judge.failure if details.judge else None) or None
    return f"{run.status}: {why}" if why else run.status


def _usage(judge: JudgeResult | None) -> Usage:
    return Usage() if judge is None else judge.usage + judge.tree_usage


def run_row(
    run: GradedRun,
    details: RunDetails | None,
    *,
    repetition: int | None,
    rubric_revision: int | None = None,
    rubric_sha256: str | None = None,
) -> RunRow:
    """The run's row: what the report counted of it (``run``), its judges, cost and tokens (``details``,
    metrics.json's; None when it could not be read whole)."""
    primary = details.judge if details is not None else None
    second = details.second_judge if details is not None else None
    usage = _usage(primary) + _usage(second)
    return RunRow(
        run=run.run,
        task=run.task,
        arm=run.arm,
        model=run.model,
        repetition=repetition,
        prompt_style=run.prompt_style,
        status=run.status,
        test_pass=run.test_pass,
        mergeable=run.mergeable,
        merge_score=run.merge_score,
        measured=run.measured,
        excluded=_excluded(run, details),
        provisional=run.provisional,
        rubric_revision=rubric_revision,
        rubric_sha256=rubric_sha256 or None,
        primary_judge=primary.judge if primary else None,
        primary_model_id=primary.model_id if primary else None,
        second_judge=second.judge if second else None,
        second_model_id=second.model_id if second else None,
        cost_usd=usage.cost_usd,
        cost_known=usage.cost_known,
        input_tokens=usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
        output_tokens=usage.output_tokens,
        human_mergeable=run.human_mergeable,
    )


def item_rows(
    row: RunRow, details: RunDetails | None, labels: Mapping[str, str] | None = None
) -> list[ItemRow]:
    """The run's verdicts, primary judge first, each beside the human label of its item (``labels``: item
    id -> label)."""
    if details is None:
        return []
    labels = labels or {}
    out = []
    for role, judge in (("primary", details.judge), ("second", details.second_judge)):
        if judge is None:
            continue
        for v in judge.verdicts:
            out.append(
                ItemRow(
                    run=row.run,
                    task=row.task,
                    arm=row.arm,
                    model=row.model,
                    repetition=row.repetition,
                    role=role,
                    judge=judge.judge,
                    model_id=v.model_id or judge.model_id,
                    item_id=v.item_id,
                    kind=v.kind,
                    verdict=v.verdict,
                    finding=v.finding,
                    reason=v.reason,
                    cited_lines=v.locations,
                    tree_judged=v.tree_judged,
                    human_label=labels.get(v.item_id),
                )
            )
    return out


# --- files ----------------------------------------------------------------------------------------------


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return value


def rows_file(
    rows: Iterable[RunRow] | Iterable[ItemRow],
    model: type[RunRow] | type[ItemRow],
    provenance: Provenance,
    fmt: RowFormat,
) -> Iterator[str]:
    """The rows (of ``model``) as a file, piece by piece (a download streams them): CSV (the provenance
    comment, a header of the model's fields in their order, then one line per row: empty cells for null,
    ``true``/``false``, lists as JSON) or JSONL (the provenance object, then one object per row)."""
    meta = provenance.model_dump_json()
    if fmt == "jsonl":
        yield json.dumps({"provenance": json.loads(meta)}, ensure_ascii=False) + "\n"
        for row in rows:
            yield row.model_dump_json() + "\n"
        return
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    buffer.write(f"# provenance {meta}\n")
    writer.writerow(model.model_fields)
    for row in rows:
        writer.writerow([_cell(v) for v in row.model_dump(mode="json").values()])
        if buffer.tell() > 1 << 16:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def rows_text(
    rows: Iterable[RunRow] | Iterable[ItemRow],
    model: type[RunRow] | type[ItemRow],
    provenance: Provenance,
    fmt: RowFormat,
) -> str:
    """:func:`rows_file` as one string."""
    return "".join(rows_file(rows, model, provenance, fmt))


def read_rows[M: (RunRow, ItemRow)](text: str, model: type[M]) -> tuple[Provenance, list[M]]:
    """A rows file (CSV or JSONL, as :func:`rows_file` writes it) read back: its provenance and its rows.
    For tests and for readers of the files; ValueError on a file that is not one."""
    first, _, rest = text.partition("\n")
    if first.startswith("# provenance "):
        provenance = Provenance.model_validate_json(first.removeprefix("# provenance "))
        rows = []
        for record in csv.DictReader(io.StringIO(rest)):
            data: dict[str, Any] = {}
            for name, value in record.items():
                field = model.model_fields[name]
                data[name] = _from_cell(value, field.annotation)
            rows.append(model.model_validate(data))
        return provenance, rows
    provenance = Provenance.model_validate(json.loads(first)["provenance"])
    return provenance, [model.model_validate_json(line) for line in rest.splitlines() if line]


def _from_cell(value: str, annotation: Any) -> Any:
    text = str(annotation)
    if value == "" and "None" in text:
        return None
    if value in ("true", "false") and "bool" in text:
        return value == "true"
    if text.startswith("list"):
        return json.loads(value)
    return value

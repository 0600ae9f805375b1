"""The human-labels file (§4, §7): one row per reviewer's label on one (run, item) pair, as CSV or JSONL.
The app's download and ``export_labels`` write it, ``import_labels`` and the queue page's upload read it,
and ``rubric report --labels`` turns it into each run's human verdict on mergeable for the judge-error
correction. One definition of the columns, the reading (every bad line named) and the settling of several
reviewers' labels on a pair."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from grading.errors import InputError

MAX_LABEL_FILE_BYTES = 64 * 1024 * 1024
MAX_LABEL_ROWS = 500_000

LABEL_FIELDS = (
    "run",
    "task",
    "arm",
    "model",
    "repetition",
    "item",
    "criterion_sha256",
    "diff_sha256",
    "reviewer",
    "verdict",
    "note",
    "time",
    "inclusion_probability",
    "adjudicated",
    "queue",
)


class LabelRow(BaseModel):
    """One label: who gave which verdict on one item of one run, for which wording of the item's criterion
    and which diff, when, and with what chance the pair had to be offered (the report's weighting)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run: str = Field(min_length=1, max_length=500)  # the run's directory as imported
    task: str = Field(min_length=1, max_length=200)
    arm: str = Field(default="", max_length=200)
    model: str = Field(default="", max_length=200)
    repetition: int = Field(ge=0)
    item: str = Field(min_length=1, max_length=40)
    criterion_sha256: str = Field(default="", pattern=r"^([0-9a-f]{64})?$")
    diff_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    reviewer: str = Field(default="", max_length=150)  # "" for the command line
    verdict: Literal["pass", "fail", "unsure"]
    note: str = Field(default="", max_length=20_000)
    time: datetime
    # None: the file does not say how the pair was drawn (a file gives it on every row or on none).
    inclusion_probability: float | None = Field(default=None, gt=0, le=1)
    adjudicated: bool = False
    queue: Literal["judges", "regrade", "agreed", "audit"] = "judges"  # where it was labelled

    def as_text(self) -> dict[str, str]:
        """The row as the CSV writes it (JSONL keeps the types)."""
        data = self.model_dump(mode="json")
        return {
            key: ""
            if data[key] is None
            else str(data[key]).lower()
            if isinstance(data[key], bool)
            else str(data[key])
            for key in data
        }


class LabelRowsError(Exception):
    """The file's bad lines, each named ("<file>:<line>: <field>: <what>"): nothing of it is taken."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems[:5]))
        self.problems = problems


def label_format(name: str) -> Literal["csv", "jsonl"] | None:
    lowered = name.lower()
    if lowered.endswith(".csv"):
        return "csv"
    if lowered.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    return None


def _problems_of(error: ValidationError, where: str) -> list[str]:
    return [f"{where}: {'.'.join(str(p) for p in e['loc']) or '(row)'}: {e['msg']}" for e in error.errors()]


def read_label_rows(data: bytes, name: str) -> list[LabelRow]:
    """Every row of a labels file (``name`` ends .csv or .jsonl), all or nothing: LabelRowsError names
    every bad line, and the whole file is refused."""
    fmt = label_format(name)
    if fmt is None:
        raise LabelRowsError([f"{name}: a labels file is .csv or .jsonl"])
    if len(data) > MAX_LABEL_FILE_BYTES:
        raise LabelRowsError([f"{name}: larger than {MAX_LABEL_FILE_BYTES} bytes"])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise LabelRowsError([f"{name}: not UTF-8 (byte {error.start})"]) from None
    raw: list[tuple[int, Any]] = []
    problems: list[str] = []
    if fmt == "jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                raw.append((number, json.loads(line)))
            except json.JSONDecodeError as error:
                problems.append(f"{name}:{number}: not JSON: {error.msg}")
    else:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = reader.fieldnames or []
        missing = [
            f
            for f in ("run", "task", "repetition", "item", "diff_sha256", "verdict", "time")
            if f not in header
        ]
        unknown = [f for f in header if f not in LABEL_FIELDS]
        if missing or unknown:
            said = [f"missing {', '.join(missing)}"] * bool(missing) + [
                f"unknown {', '.join(unknown)}"
            ] * bool(unknown)
            raise LabelRowsError([f"{name}:1: header: {'; '.join(said)}"])
        for row in reader:
            if None in row:
                problems.append(f"{name}:{reader.line_num}: more cells than the header names")
                continue
            raw.append((reader.line_num, {k: v for k, v in row.items() if k is not None and v != ""}))
    if len(raw) > MAX_LABEL_ROWS:
        raise LabelRowsError([f"{name}: more than {MAX_LABEL_ROWS} rows"])
    rows: list[LabelRow] = []
    lines: list[int] = []
    for number, value in raw:
        where = f"{name}:{number}"
        if not isinstance(value, dict):
            problems.append(f"{where}: (row): not an object")
            continue
        try:
            rows.append(LabelRow.model_validate(value))
            lines.append(number)
        except ValidationError as error:
            problems.extend(_problems_of(error, where))
    # The inclusion probability weighs the labels against each other: given for some rows only, the
    # others' weights would be guesses.
    if any(r.inclusion_probability is not None for r in rows):
        problems.extend(
            f"{name}:{number}: inclusion_probability: missing, while other rows give it (a labels file "
            "gives it on every row or on none)"
            for number, r in zip(lines, rows, strict=True)
            if r.inclusion_probability is None
        )
    if problems:
        raise LabelRowsError(problems)
    return rows


def write_label_rows(rows: Iterable[LabelRow], fmt: Literal["csv", "jsonl"]) -> Iterable[str]:
    """The rows as a labels file, piece by piece (a download streams it)."""
    if fmt == "jsonl":
        for row in rows:
            yield json.dumps(row.model_dump(mode="json"), ensure_ascii=False, sort_keys=True) + "\n"
        return
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=LABEL_FIELDS, lineterminator="\n")
    writer.writeheader()
    yield buffer.getvalue()
    for row in rows:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(row.as_text())
        yield buffer.getvalue()


def settled_verdict(labels: Iterable[tuple[str, bool]]) -> str | None:
    """The verdict a pair's labels give, each (verdict, adjudicated): a maintainer's adjudication, else the
    reviewers' verdict when they all gave the same one; None when they disagree or none labelled it."""
    given = set()
    for verdict, adjudicated in labels:
        if adjudicated:
            return verdict
        given.add(verdict)
    return given.pop() if len(given) == 1 else None


def settled_items(rows: Sequence[LabelRow]) -> dict[str, dict[str, str]]:
    """Per run (its ``run`` field), each item's settled verdict (:func:`settled_verdict`; items whose
    reviewers disagree are left out)."""
    by_pair: dict[tuple[str, str], list[tuple[str, bool]]] = {}
    for row in rows:
        by_pair.setdefault((row.run, row.item), []).append((row.verdict, row.adjudicated))
    settled: dict[str, dict[str, str]] = {}
    for (run, item), labels in by_pair.items():
        verdict = settled_verdict(labels)
        if verdict is not None:
            settled.setdefault(run, {})[item] = verdict
    return settled


# How a pair came to be labelled: (queue, inclusion probability) of one of its labels.
Draw = tuple[str, float]


def run_inclusion_probability(judged: Iterable[str], draws: Mapping[str, Iterable[Draw]]) -> float | None:
    """The chance a run had of being labelled on every blocker the judge decided (``judged``), from how
    its pairs were drawn (``draws``: item -> (queue, inclusion probability) of each of its labels); None
    when a judged item has no draw.

    The queues draw pairs independently of each other (every disagreement; an agreed pair by its own
    pseudo-random key), so the pairs of a run all come up with the product of their probabilities. The
    audit draws the run whole: its blockers share one draw, whose probability counts once. A run can be
    completed either way, so its probability is that of either happening: 1 − (1 − audit)(1 − product),
    the product taken only when every judged item was offered by a queue (else only the audit could have
    completed it). Of a pair's several labels from the same kind of draw, the largest probability counts
    (labels of one pair from one draw give the same one)."""
    audit = 0.0
    offered = 1.0
    for item in judged:
        given = list(draws.get(item, ()))
        if not given:
            return None
        audit = max([audit, *(p for queue, p in given if queue == "audit")])
        offered *= max((p for queue, p in given if queue != "audit"), default=0.0)
    chance = audit + offered - audit * offered  # 1 − (1 − audit)(1 − offered), exact when either is 0
    return chance if chance > 0 else None


def label_draws(rows: Sequence[LabelRow]) -> dict[str, dict[str, list[Draw]]] | None:
    """Per run, each item's draws (:data:`Draw`) from its labels; None when the file gives no inclusion
    probability (uniform sampling is then assumed)."""
    if not rows or any(row.inclusion_probability is None for row in rows):
        return None
    draws: dict[str, dict[str, list[Draw]]] = {}
    for row in rows:
        assert row.inclusion_probability is not None
        draws.setdefault(row.run, {}).setdefault(row.item, []).append((row.queue, row.inclusion_probability))
    return draws


@dataclass(frozen=True)
class LabelFile:
    """A labels file as ``rubric report --labels`` reads it, per run directory (resolved): each item's
    settled verdict and its draws; ``draws`` is None when the file gives no inclusion probability."""

    items: dict[Path, dict[str, str]]
    draws: dict[Path, dict[str, list[Draw]]] | None


def load_label_file(path: Path) -> LabelFile:
    """A labels file (CSV or JSONL) for ``rubric report --labels``: per run directory (taken from the
    file's directory, resolved), each item's settled verdict and how the labels were drawn."""
    if not path.is_file():
        raise InputError(path, "file not found")
    if path.stat().st_size > MAX_LABEL_FILE_BYTES:
        raise InputError(path, f"larger than {MAX_LABEL_FILE_BYTES} bytes")
    try:
        rows = read_label_rows(path.read_bytes(), str(path))
    except LabelRowsError as error:
        raise InputError(path, "; ".join(error.problems[:20])) from None
    draws = label_draws(rows)
    return LabelFile(
        items={(path.parent / run).resolve(): items for run, items in settled_items(rows).items()},
        draws=None if draws is None else {(path.parent / run).resolve(): d for run, d in draws.items()},
    )


def _assessment(details: Any) -> Any:
    """The run's assessment where the primary judge decided its outcome (else None)."""
    from grading.checks.outcome import RunDetails

    if not isinstance(details, dict) or details.get("status") not in ("mergeable", "not_mergeable"):
        return None
    try:
        assessment = RunDetails.model_validate(details).assessment
    except ValidationError:
        return None
    return None if assessment is None or assessment.judge_failure is not None else assessment


def judged_blockers(details: Any) -> list[str] | None:
    """The blockers the primary judge decided on a run, from its metrics.json ``details``; None where it
    decided nothing (no human verdict can be defined on the run)."""
    assessment = _assessment(details)
    if assessment is None:
        return None
    return [*assessment.blockers_passed, *assessment.blockers_failed] or None


def human_mergeable_from_items(details: Any, items: dict[str, str]) -> bool | None:
    """A run's human verdict on mergeable from its metrics.json ``details`` and the settled labels of its
    items: defined only where the primary judge decided the outcome and every blocker it decided has a
    pass or fail; then mergeable when scope and test integrity passed and no blocker failed."""
    assessment = _assessment(details)
    judged = judged_blockers(details)
    if (
        assessment is None
        or judged is None
        or any(items.get(item) not in ("pass", "fail") for item in judged)
    ):
        return None
    return bool(assessment.in_scope and assessment.integrity_ok) and all(items[i] == "pass" for i in judged)

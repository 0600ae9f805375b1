"""Judging the oracle's mutants (:mod:`grading.mutants.derive`) like admission rows: scope, integrity and the
judge without the ``pass`` short-circuit, a row each (:class:`MutantRow`), and the counts a calibration run
stores (:class:`MutantReport`). Never part of admission. Also the command line's file of mutants a maintainer
marked harmless (:func:`load_harmless`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path

from pydantic import BaseModel

from grading.basetree import ObjectMissing
from grading.checks.integrity import check_integrity
from grading.checks.outcome import RubricAssessment, assess
from grading.checks.run import LoadedTask, read_task_files
from grading.checks.scope import check_scope
from grading.diffs import decode_diff, parse_diff
from grading.errors import InputError
from grading.judge.backend import Backend
from grading.judge.cache import VerdictCache
from grading.judge.models import JudgeResult, Usage
from grading.judge.prompt import check_diff_text
from grading.judge.runner import JudgeSettings
from grading.judge.specs import make_backend
from grading.judge.sweep import SweepJob, judge_sweep
from grading.judge.tree import base_tree_for
from grading.mutants.derive import DEFAULT_MAX_MUTANTS, MUTANT_ID, Mutant, derive_mutants
from grading.mutants.kinds import MutantKind, shorten
from grading.mutants.parse import MAX_PARSED_BYTES, BaseReader
from grading.run_files import ORACLE_DIFF_NAME, RUBRIC_NAME
from grading.schema import PromptStyle, Rubric, TestsConfig
from grading.strict_json import read_input_bytes


def load_harmless(path: Path) -> dict[str, str]:
    """The mutants a maintainer marked harmless, from a text file: one ``<mutant id> <reason>`` per line;
    blank lines and lines starting with ``#`` are skipped. InputError naming the file and line for a line
    without a well-formed id or without a reason, or an id given twice."""
    try:
        text = read_input_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(path, "not UTF-8 text") from None
    out: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        mutant_id, _, reason = stripped.partition(" ")
        where = f"line {number}"
        if MUTANT_ID.fullmatch(mutant_id) is None:
            raise InputError(
                path,
                f"{shorten(mutant_id, 40)!r} is not a mutant id (kind:hex, as rubric check prints)",
                where,
            )
        if not reason.strip():
            raise InputError(
                path, f"{mutant_id} has no reason: write why leaving that part out is harmless", where
            )
        if mutant_id in out:
            raise InputError(path, f"{mutant_id} is marked twice", where)
        out[mutant_id] = reason.strip()
    return out


class MutantRow(BaseModel):
    """One mutant judged like an admission row: caught when the rubric calls it not mergeable."""

    id: str
    kind: MutantKind
    description: str
    diff: str  # as the judge saw it
    mergeable: bool | None  # None on a judge failure
    caught: bool
    harmless: bool = False  # still mergeable, and a maintainer said that is fine
    harmless_reason: str = ""
    actual: str
    in_scope: bool
    integrity_ok: bool
    blockers_failed: list[str] = []
    blockers_not_measured: list[str] = []
    judge_failure: str | None = None
    judge: JudgeResult | None = None


class MutantReport(BaseModel):
    """Every judged mutant, and the counts a calibration run stores. Never part of admission."""

    task: str
    judge: str
    scripted: bool
    derived: int  # distinct mutants before the cap
    duplicates: int
    capped: bool
    notes: list[str] = []
    rows: list[MutantRow]
    total: int  # judged
    caught: int
    harmless: int  # still mergeable and marked harmless
    still_mergeable: list[str]  # ids the rubric still calls mergeable and nobody marked harmless
    judge_failures: int
    unknown_harmless: list[str] = []  # marked ids that are not among these mutants (another oracle?)
    calls: int = 0
    usage: Usage = Usage()


def describe(assessment: RubricAssessment) -> str:
    """A mutant's outcome in words, like an admission row's."""
    if assessment.judge_failure is not None:
        return f"judge failure: {assessment.judge_failure}"
    reasons = [f"fails {', '.join(assessment.blockers_failed)}"] if assessment.blockers_failed else []
    if not assessment.in_scope:
        reasons.append("out of scope")
    if not assessment.integrity_ok:
        reasons.append("test integrity fails")
    if reasons:
        return "caught: not mergeable: " + "; ".join(reasons)
    return "still mergeable: every measured blocker passes"


def mutant_row(
    rubric: Rubric,
    tests: TestsConfig | None,
    mutant: Mutant,
    result: JudgeResult,
    harmless: Mapping[str, str],
) -> MutantRow:
    """Grade one judged mutant: scope and integrity from its diff, the judge's verdicts, a harmless mark."""
    text = decode_diff(mutant.diff)
    changes = parse_diff(text.encode("utf-8"), f"mutant {mutant.id}")
    scope = check_scope(rubric.scope, changes, [])
    integrity = check_integrity(tests, changes, None, None, None, None)
    assessment = assess(rubric, scope, integrity, result)
    mergeable = assessment.mergeable
    reason = harmless.get(mutant.id, "") if mergeable is True else ""
    return MutantRow(
        id=mutant.id,
        kind=mutant.kind,
        description=mutant.description,
        diff=text,
        mergeable=mergeable,
        caught=mergeable is False,
        harmless=bool(reason),
        harmless_reason=reason,
        actual=describe(assessment),
        in_scope=assessment.in_scope,
        integrity_ok=assessment.integrity_ok,
        blockers_failed=assessment.blockers_failed,
        blockers_not_measured=assessment.blockers_not_measured,
        judge_failure=assessment.judge_failure,
        judge=result,
    )


# ``on_row(index, total, row)``: each mutant as soon as it is judged, in any order.
MutantCallback = Callable[[int, int, MutantRow], None]


def check_mutants(
    task_dir: Path,
    manifest_path: Path,
    judge: Backend | str,
    *,
    max_mutants: int = DEFAULT_MAX_MUTANTS,
    harmless: Mapping[str, str] | None = None,
    cache: VerdictCache | None = None,
    settings: JudgeSettings | None = None,
    on_row: MutantCallback | None = None,
    rubric_path: Path | None = None,
    task_json: Path | None = None,
    checkout: Path | None = None,
    prompt_style: PromptStyle | None = None,
) -> MutantReport:
    """``rubric check --mutants``: the task folder read as :func:`grading.admission.check.check_task` reads it
    (``rubric_path``/``task_json`` for a held-out rubric; InputError for the same bad inputs), then
    :func:`judge_mutants` with the other arguments."""
    files = read_task_files(
        task_dir, manifest_path, rubric_path=rubric_path, task_json=task_json, admission=True
    )
    return judge_mutants(
        files,
        judge,
        max_mutants=max_mutants,
        harmless=harmless,
        cache=cache,
        settings=settings,
        on_row=on_row,
        checkout=checkout,
        prompt_style=prompt_style,
    )


def judge_mutants(
    files: LoadedTask,
    judge: Backend | str,
    *,
    max_mutants: int = DEFAULT_MAX_MUTANTS,
    harmless: Mapping[str, str] | None = None,
    cache: VerdictCache | None = None,
    settings: JudgeSettings | None = None,
    on_row: MutantCallback | None = None,
    checkout: Path | None = None,
    prompt_style: PromptStyle | None = None,
) -> MutantReport:
    """Derive the mutants of the task's ``oracle_diff`` and judge each like an admission row (scope,
    integrity, the judge without the ``pass`` short-circuit), in memory.

    ``files`` is the task as :func:`grading.admission.check.check_admission` takes it. ``harmless`` maps
    mutant ids a maintainer marked harmless to the reason. Verdicts go through ``cache``: a mutant judged
    before costs no call. ``checkout`` (the repository holding task.json's ``base_commit``) lets
    revert-condition mutants of Python files be checked to parse. InputError for a task without a rubric or
    oracle diff, or a prompt style the task lacks.
    """
    backend = make_backend(judge) if isinstance(judge, str) else judge
    try:
        task = files.task.posed_as(prompt_style)  # the variant admission judges with
    except ValueError as exc:
        raise InputError(None, str(exc), "--prompt-style") from None
    rubric = files.rubric
    if rubric is None:
        raise InputError(Path(files.task_file).parent / RUBRIC_NAME, "file not found")
    tests = files.tests
    settings = settings or JudgeSettings()
    if files.oracle_diff is None:
        raise InputError(ORACLE_DIFF_NAME, "file not found")
    oracle = files.oracle_diff
    base: BaseReader | None = None
    if checkout is not None:
        tree = base_tree_for(task, checkout, Path(files.task_file))

        def base(path: str) -> bytes | None:
            try:
                return tree.read(path, MAX_PARSED_BYTES + 1)
            except ObjectMissing:  # not held by this checkout: no base to check the mutant's syntax against
                return None

    mutants = derive_mutants(oracle, "oracle.diff", max_mutants=max_mutants, base=base)
    marks = dict(harmless or {})
    jobs = []
    for n, mutant in enumerate(mutants.mutants):
        text = decode_diff(mutant.diff)
        check_diff_text(text, source=f"oracle.diff mutant {mutant.id}", max_chars=settings.max_diff_chars)
        changes = parse_diff(text.encode("utf-8"), f"mutant {mutant.id}")
        edited = bool(check_integrity(tests, changes, None, None, None, None).config_edits)
        jobs.append(SweepJob(label=str(n), task=task, rubric=rubric, diff_text=text, config_edited=edited))

    def progress(done: int, total: int, label: str, result: JudgeResult) -> None:
        if on_row is not None:
            n = int(label)
            on_row(n, total, mutant_row(rubric, tests, mutants.mutants[n], result, marks))

    sweep = asyncio.run(judge_sweep(jobs, backend, cache=cache, settings=settings, progress=progress))
    rows = [
        mutant_row(rubric, tests, mutant, result, marks)
        for mutant, result in zip(mutants.mutants, sweep.results, strict=True)
    ]
    ids = {row.id for row in rows}
    return MutantReport(
        task=task.id,
        judge=backend.spec,
        scripted=backend.scripted,
        derived=mutants.derived,
        duplicates=mutants.duplicates,
        capped=mutants.capped,
        notes=mutants.notes,
        rows=rows,
        total=len(rows),
        caught=sum(row.caught for row in rows),
        harmless=sum(row.harmless for row in rows),
        still_mergeable=[row.id for row in rows if row.mergeable is True and not row.harmless],
        judge_failures=sum(row.judge_failure is not None for row in rows),
        unknown_harmless=sorted(set(marks) - ids),
        calls=sweep.calls,
        usage=sweep.usage,
    )

"""The audit sample (§7, §9): judged runs drawn uniformly at random within each arm × model stratum, whose
every blocker the judge decided is then labelled in the review queue's Audit mode, one run at a time. An
audited run counts for the judge-error correction once each of those blockers has a settled label, from
whichever queue (services.runs.queue.human_verdicts_by_grade); the draw records each run's inclusion
probability, the stratum's drawn share, for a weighted estimate."""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass

from django.db import transaction

from rubrics_app.access import Actor
from rubrics_app.models import AuditDraw, HumanVerdict, QueueKind, ReportRow, Repository, Role

MAX_PER_STRATUM = 100  # runs one draw adds to each stratum at most


@dataclass(frozen=True)
class Drawn:
    runs: int  # runs drawn by this call
    strata: int  # strata they came from


def judged_runs(repository: Repository) -> dict[tuple[str, str], list[int]]:
    """The runs whose current grade the primary judge decided, per (arm, model): judged (a human verdict
    can be defined on them: ReportRow.human_items is not null) with scope and test integrity holding
    (human_checks), the runs the report's correction compares with human labels."""
    strata: dict[tuple[str, str], list[int]] = defaultdict(list)
    for run_id, arm, model in (
        ReportRow.objects.filter(repository=repository, current=True, human_checks=True)
        .exclude(human_items="null")
        .order_by("run_id")
        .values_list("run_id", "arm", "model")
    ):
        strata[(arm, model)].append(run_id)
    return strata


def draw(repository: Repository, per_stratum: int, by: Actor, rng: random.Random | None = None) -> Drawn:
    """Draw up to ``per_stratum`` more judged runs from every arm × model stratum, uniformly at random among
    the stratum's runs not drawn yet, and record every drawn run's inclusion probability (drawn / judged
    runs of the stratum, the same for each under simple random sampling)."""
    by.require(Role.REVIEWER, repository)
    if not 1 <= per_stratum <= MAX_PER_STRATUM:
        raise ValueError(f"runs per stratum: from 1 to {MAX_PER_STRATUM}, not {per_stratum}")
    rng = rng or random.SystemRandom()
    added = strata_used = 0
    with transaction.atomic():
        drawn = set(
            AuditDraw.objects.select_for_update()
            .filter(repository=repository)
            .values_list("run_id", flat=True)
        )
        for (arm, model), runs in sorted(judged_runs(repository).items()):
            left = [run_id for run_id in runs if run_id not in drawn]
            chosen = rng.sample(left, min(per_stratum, len(left)))
            if not chosen:
                continue
            strata_used += 1
            added += len(chosen)
            AuditDraw.objects.bulk_create(
                AuditDraw(
                    repository=repository,
                    run_id=run_id,
                    arm=arm,
                    model=model,
                    inclusion_probability=0.0,
                    stratum_runs=len(runs),
                    by=by.recorded_user,
                )
                for run_id in chosen
            )
            in_stratum = AuditDraw.objects.filter(repository=repository, arm=arm, model=model)
            share = in_stratum.count() / len(runs)
            in_stratum.update(inclusion_probability=share, stratum_runs=len(runs))
            # The audit labels already given in the stratum were drawn with this chance too, now.
            HumanVerdict.objects.filter(run_id__in=in_stratum.values("run_id"), queue=QueueKind.AUDIT).update(
                inclusion_probability=share
            )
    return Drawn(added, strata_used)


def inclusion_probability_of(run_id: int) -> float | None:
    """The run's audit inclusion probability (None: never drawn)."""
    return AuditDraw.objects.filter(run_id=run_id).values_list("inclusion_probability", flat=True).first()


@dataclass(frozen=True)
class AuditSummary:
    drawn: int  # runs drawn so far
    judged: int  # judged runs (current grades) there are to draw from
    strata: int  # arm × model strata with judged runs


def summary(repository: Repository) -> AuditSummary:
    strata = judged_runs(repository)
    return AuditSummary(
        drawn=AuditDraw.objects.filter(repository=repository).count(),
        judged=sum(len(runs) for runs in strata.values()),
        strata=len(strata),
    )

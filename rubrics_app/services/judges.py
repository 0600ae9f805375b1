"""A repository's judges: checked as the `rubric` command checks them, and saved with an audit event.

API keys are never stored or shown: the SDKs read them from the worker's environment.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from grading import Decoding, InputError, judge_family, make_backend, second_judge_problem
from rubrics_app.access import Actor
from rubrics_app.models import (
    AuditVerb,
    JudgeSetting,
    Repository,
    Role,
    deciding_current_grades,
)
from rubrics_app.services import audit


class JudgeSettingError(ValueError):
    """A judge setting that is refused; ``field`` is the form field it belongs to."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


def _checked(spec: str, decoding: Decoding, field: str) -> str:
    spec = spec.strip()
    try:
        # The same checks as the command line: full model id, known provider, decoding keys the runner does
        # not set, a scripted file that parses. The key is a placeholder: nothing is called here.
        make_backend(spec, decoding=decoding, api_key="not-used-for-checking")
    except InputError as exc:
        raise JudgeSettingError(field, exc.message) from None
    return spec


@transaction.atomic
def set_judges(
    repository: Repository,
    *,
    by: Actor,
    judge: str,
    second_judge: str = "",
    decoding: dict[str, Any] | None = None,
    second_decoding: dict[str, Any] | None = None,
    monthly_cap_usd: Decimal | None = None,
    sweep_batch: bool | None = None,
) -> JudgeSetting:
    """Set the repository's judges. Raises JudgeSettingError naming the
    field for a spec or decoding the command line would refuse, or a second judge of the primary's family.
    ``sweep_batch`` (None: as it was) sends sweeps through the providers' batch APIs."""
    by.require(Role.MAINTAINER, repository)
    decoding, second_decoding = dict(decoding or {}), dict(second_decoding or {})
    judge = _checked(judge, decoding, "judge")
    second_judge = second_judge.strip()
    if second_judge:
        second_judge = _checked(second_judge, second_decoding, "second_judge")
        # grading's one family rule (scripted judges are test stand-ins, exempt).
        if second_judge_problem(judge, second_judge) is not None:
            raise JudgeSettingError(
                "second_judge",
                f"{second_judge} is of the same model family as the primary judge ({judge_family(judge)}); "
                "the second judge comes from another family",
            )
    elif second_decoding:
        raise JudgeSettingError("second_decoding", "decoding parameters for a second judge that is not set")
    if monthly_cap_usd is not None and monthly_cap_usd < 0:
        raise JudgeSettingError("monthly_cap_usd", "a spend cap is zero or more")
    # The primary judge is part of which grade of a run is current: it changes as the grade writer says.
    with deciding_current_grades(repository=repository):
        setting, created = JudgeSetting.objects.select_for_update().get_or_create(
            repository=repository, defaults={"judge": judge}
        )
        before = {
            "judge": setting.judge,
            "second_judge": setting.second_judge,
            "decoding": setting.decoding,
            "second_decoding": setting.second_decoding,
            "monthly_cap_usd": str(setting.monthly_cap_usd) if setting.monthly_cap_usd is not None else None,
            "sweep_batch": setting.sweep_batch,
        }
        setting.judge, setting.second_judge = judge, second_judge
        setting.decoding, setting.second_decoding = decoding, second_decoding
        setting.monthly_cap_usd = monthly_cap_usd
        if sweep_batch is not None:
            setting.sweep_batch = sweep_batch
        if setting.sweep_batch:
            for spec in (s for s in (judge, second_judge) if s):
                try:
                    make_backend(spec, batch=True, api_key="not-used-for-checking")
                except InputError as exc:
                    raise JudgeSettingError("sweep_mode", f"{spec}: {exc.message}") from None
        setting.updated_at = timezone.now()
        setting.updated_by = by.user if getattr(by.user, "is_authenticated", False) else None
        setting.save()
    after = {
        "judge": judge,
        "second_judge": second_judge,
        "decoding": decoding,
        "second_decoding": second_decoding,
        "monthly_cap_usd": str(monthly_cap_usd) if monthly_cap_usd is not None else None,
        "sweep_batch": setting.sweep_batch,
    }
    audit.record(
        AuditVerb.JUDGES_SET, actor=by.user, repository=repository, detail={"before": before, "after": after}
    )
    return setting

"""Admission (§5): the calibration rows of a rubric judged and checked (check), stored so an unchanged
rubric is not judged twice (store), and the injection suite: payloads (corpus) planted at a site in a
file's comment syntax (sites) into lazy and oracle diffs (injection)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from grading.lazy import lazy_interface

# module -> the public names it defines
_PUBLIC: dict[str, tuple[str, ...]] = {
    "grading.admission.check": (
        "SUITE_KINDS",
        "check_admission",
        "check_task",
        "inject_reviewer_comment",
        "teach_scripted_judge",
    ),
    "grading.admission.corpus": ("PAYLOAD_KINDS",),
    "grading.admission.injection": ("InjectionSummary",),
    "grading.admission.store": ("AdmissionReport", "AdmissionRow", "AdmissionStore", "default_store_path"),
}
__all__, _MODULE_OF, __getattr__, __dir__ = lazy_interface(__name__, _PUBLIC, globals())

if TYPE_CHECKING:
    from grading.admission.check import SUITE_KINDS as SUITE_KINDS
    from grading.admission.check import check_admission as check_admission
    from grading.admission.check import check_task as check_task
    from grading.admission.check import inject_reviewer_comment as inject_reviewer_comment
    from grading.admission.check import teach_scripted_judge as teach_scripted_judge
    from grading.admission.corpus import PAYLOAD_KINDS as PAYLOAD_KINDS
    from grading.admission.injection import InjectionSummary as InjectionSummary
    from grading.admission.store import AdmissionReport as AdmissionReport
    from grading.admission.store import AdmissionRow as AdmissionRow
    from grading.admission.store import AdmissionStore as AdmissionStore
    from grading.admission.store import default_store_path as default_store_path

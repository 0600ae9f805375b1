"""The oracle's mutants: variants derived from the oracle diff (derive, by the kinds in kinds, on the diff
model of diff, syntax-checked by parse), judged like admission rows (judging)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from grading.lazy import lazy_interface

# module -> the public names it defines
_PUBLIC: dict[str, tuple[str, ...]] = {
    "grading.mutants.derive": ("DEFAULT_MAX_MUTANTS", "Mutant", "MutantSet", "derive_mutants"),
    "grading.mutants.judging": (
        "MutantReport",
        "MutantRow",
        "check_mutants",
        "judge_mutants",
        "load_harmless",
    ),
}
__all__, _MODULE_OF, __getattr__, __dir__ = lazy_interface(__name__, _PUBLIC, globals())

if TYPE_CHECKING:
    from grading.mutants.derive import DEFAULT_MAX_MUTANTS as DEFAULT_MAX_MUTANTS
    from grading.mutants.derive import Mutant as Mutant
    from grading.mutants.derive import MutantSet as MutantSet
    from grading.mutants.derive import derive_mutants as derive_mutants
    from grading.mutants.judging import MutantReport as MutantReport
    from grading.mutants.judging import MutantRow as MutantRow
    from grading.mutants.judging import check_mutants as check_mutants
    from grading.mutants.judging import judge_mutants as judge_mutants
    from grading.mutants.judging import load_harmless as load_harmless

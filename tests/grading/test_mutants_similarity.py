"""One-place's grouping of near-identical hunks (``grading.mutants.kinds.similar_components``) against a
brute-force reference that compares every pair: the prefix filter that skips most pairs must find the same
groups, on generated sets built so that many pairs sit just either side of the threshold."""

from __future__ import annotations

import random

import pytest

from grading.mutants.kinds import SIMILAR_RATIO, similar_components

Gram = tuple[str, int]


def brute_force(sets: list[frozenset[Gram]]) -> list[set[int]]:
    """The connected components of the graph whose edges are every pair at Dice >= SIMILAR_RATIO."""
    component = list(range(len(sets)))
    for i in range(len(sets)):
        for j in range(i + 1, len(sets)):
            if 2 * len(sets[i] & sets[j]) >= SIMILAR_RATIO * (len(sets[i]) + len(sets[j])):
                old, new = component[j], component[i]
                component = [new if c == old else c for c in component]
    return groups_of(component)


def groups_of(component: list[int]) -> list[set[int]]:
    groups: dict[int, set[int]] = {}
    for i, c in enumerate(component):
        groups.setdefault(c, set()).add(i)
    return sorted(groups.values(), key=min)


def generated(seed: int) -> list[frozenset[Gram]]:
    """Families of sets: each a base set with some elements swapped for others and some added or removed,
    by amounts spread around what a Dice of SIMILAR_RATIO allows, over a small shared vocabulary (so that
    sets of different families share elements too), shuffled."""
    rng = random.Random(seed)
    vocabulary = [f"{a}{b}{c}" for a in "abcde" for b in "fghij" for c in "klmno"]

    def draw(n: int) -> set[Gram]:
        return {(rng.choice(vocabulary), rng.randrange(3)) for _ in range(n)}

    sets: list[frozenset[Gram]] = []
    for _ in range(rng.randint(3, 12)):
        base = draw(rng.randint(8, 120))
        for _ in range(rng.randint(1, 8)):
            member = set(base)
            changes = int(len(base) * rng.uniform(0, 0.35))
            for gram in rng.sample(sorted(member), min(changes, len(member) - 1)):
                member.discard(gram)
            member |= draw(rng.randint(0, changes + 1))
            sets.append(frozenset(member))
    rng.shuffle(sets)
    return sets


@pytest.mark.parametrize("seed", range(60))
def test_prefix_filter_finds_the_groups_comparing_every_pair_finds(seed: int) -> None:
    sets = generated(seed)
    assert groups_of(similar_components(sets)) == brute_force(sets)


def test_the_generated_sets_hold_pairs_either_side_of_the_threshold() -> None:
    # Without pairs just above and just below SIMILAR_RATIO, the test above would prove little.
    above = below = 0
    for seed in range(60):
        sets = generated(seed)
        for i in range(len(sets)):
            for j in range(i + 1, len(sets)):
                dice = 2 * len(sets[i] & sets[j]) / (len(sets[i]) + len(sets[j]))
                above += SIMILAR_RATIO <= dice < SIMILAR_RATIO + 0.05
                below += SIMILAR_RATIO - 0.05 <= dice < SIMILAR_RATIO
    assert above > 100 and below > 100


def test_identical_sets_form_one_group_and_a_lone_set_its_own() -> None:
    same = frozenset({("abc", 0), ("bcd", 0), ("cde", 0), ("def", 0)})
    other = frozenset({("xyz", 0), ("yzw", 0), ("zwv", 0), ("wvu", 0)})
    assert groups_of(similar_components([same, other, same, same])) == [{0, 2, 3}, {1}]

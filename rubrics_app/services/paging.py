"""Pages of a long list (the review queue, a task's runs): which slice a page number means, and the links
either side. One implementation, so every paged list clamps and counts the same way."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class Sliceable[T](Protocol):
    def __getitem__(self, index: slice, /) -> Sequence[T] | Any: ...


@dataclass(frozen=True)
class Page[T]:
    entries: list[T]
    number: int  # from 1
    pages: int  # at least 1, even for an empty list
    size: int
    total: int = 0

    @property
    def first_position(self) -> int:
        """The position in the whole list (from 1) of the page's first entry."""
        return (self.number - 1) * self.size + 1

    @property
    def last_position(self) -> int:
        return self.first_position + len(self.entries) - 1

    @property
    def previous_number(self) -> int | None:
        return self.number - 1 if self.number > 1 else None

    @property
    def next_number(self) -> int | None:
        return self.number + 1 if self.number < self.pages else None

    def map[U](self, convert: Callable[[T], U]) -> Page[U]:
        """The same page with each entry converted."""
        return Page([convert(e) for e in self.entries], self.number, self.pages, self.size, self.total)


def page_of[T](rows: Sliceable[T], number: int, size: int, total: int) -> Page[T]:
    """Page ``number`` (from 1; one past either end is the nearest page) of ``size`` entries of ``rows`` (a
    query set is sliced in the database: only the page is read), which hold ``total`` entries."""
    pages = max(1, math.ceil(total / size))
    number = min(max(1, number), pages)
    start = (number - 1) * size
    return Page(list(rows[start : start + size]), number, pages, size, total)

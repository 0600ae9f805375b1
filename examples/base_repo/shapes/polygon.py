"""Polygon measurements. A polygon is a list of (x, y) vertices in order, either orientation."""

from __future__ import annotations

import math
from dataclasses import dataclass

Point = tuple[float, float]


def _edges(points: list[Point]) -> list[tuple[Point, Point]]:
    if len(points) < 3:
        raise ValueError(f"a polygon needs at least 3 vertices, got {len(points)}")
    return list(zip(points, points[1:] + points[:1], strict=True))


def signed_area(points: list[Point]) -> float:
    """Shoelace area: positive for counter-clockwise vertices, negative for clockwise ones."""
    return sum(x1 * y2 - x2 * y1 for (x1, y1), (x2, y2) in _edges(points)) / 2


def polygon_area(points: list[Point]) -> float:
    """Area enclosed by the polygon."""
    return signed_area(points)


def perimeter(points: list[Point]) -> float:
    """Length of the polygon's boundary."""
    return sum(math.dist(a, b) for a, b in _edges(points))


def centroid(points: list[Point]) -> Point:
    """Centre of mass of the polygon's area, for either orientation."""
    # The signed area keeps the orientation, so the sums below and the divisor change sign together.
    area = signed_area(points)
    if area == 0:
        raise ValueError("a degenerate polygon has no centroid")
    cx = cy = 0.0
    for (x1, y1), (x2, y2) in _edges(points):
        cross = x1 * y2 - x2 * y1
        cx += (x1 + x2) * cross
        cy += (y1 + y2) * cross
    return cx / (6 * area), cy / (6 * area)


@dataclass(frozen=True)
class Polygon:
    """A named polygon, as the drawing code stores it."""

    name: str
    points: list[Point]

    @property
    def area(self) -> float:
        return signed_area(self.points)

    @property
    def perimeter(self) -> float:
        return perimeter(self.points)

import math

import pytest
from shapes import Polygon, centroid, perimeter, polygon_area, signed_area

SQUARE_CCW = [(0.0, 0.0), (2.0, 0.0), (2.0, 2.0), (0.0, 2.0)]
TRIANGLE_CCW = [(0.0, 0.0), (4.0, 0.0), (0.0, 3.0)]


def test_square_area() -> None:
    assert polygon_area(SQUARE_CCW) == 4.0


def test_triangle_area() -> None:
    assert polygon_area(TRIANGLE_CCW) == 6.0


def test_signed_area_of_counter_clockwise_square() -> None:
    assert signed_area(SQUARE_CCW) == 4.0


def test_perimeter_of_triangle() -> None:
    assert perimeter(TRIANGLE_CCW) == 12.0


def test_centroid_of_square() -> None:
    assert centroid(SQUARE_CCW) == (1.0, 1.0)


def test_centroid_of_triangle() -> None:
    cx, cy = centroid(TRIANGLE_CCW)
    assert math.isclose(cx, 4 / 3) and math.isclose(cy, 1.0)


def test_too_few_vertices() -> None:
    with pytest.raises(ValueError, match="at least 3 vertices"):
        polygon_area([(0.0, 0.0), (1.0, 1.0)])


def test_polygon_class() -> None:
    shape = Polygon("square", SQUARE_CCW)
    assert shape.area == 4.0
    assert shape.perimeter == 8.0


def test_unit_square_perimeter(unit_square: list[tuple[float, float]]) -> None:
    assert perimeter(unit_square) == 4.0

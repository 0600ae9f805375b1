"""Shared fixtures for the shapes test suite."""

import pytest


@pytest.fixture
def unit_square() -> list[tuple[float, float]]:
    return [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)]

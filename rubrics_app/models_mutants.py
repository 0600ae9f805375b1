"""The oracle's mutants.

Moved to ``rubrics_app.models.mutants``: import them from ``rubrics_app.models``. This module re-exports them
until every caller does."""

from rubrics_app.models.mutants import *  # noqa: F403

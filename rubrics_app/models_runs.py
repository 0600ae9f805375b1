"""Agent runs, grades, verdicts, the review queue, disputes and sweeps.

Moved to ``rubrics_app.models.runs``: import them from ``rubrics_app.models``. This module re-exports them
until every caller does."""

from rubrics_app.models.runs import *  # noqa: F403

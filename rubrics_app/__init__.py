"""The web app. ``celery_app`` is exported so that ``celery -A rubrics_app`` finds it."""

from rubrics_app.celery import app as celery_app

__all__ = ["celery_app"]

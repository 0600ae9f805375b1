"""System checks for a process that serves pages (runserver, a WSGI server), kept out of every other command.

Django runs all ordinary checks in `migrate`, `createsuperuser` and the rest, so a check that fails before
`collectstatic` would block the very commands a deployment runs first. These are registered (apps.py) as
deployment checks under the `serving` tag instead: `check --deploy` lists them, and rubrics_app/wsgi.py
(which `runserver` loads too, as WSGI_APPLICATION) runs them and refuses to start on an error."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.staticfiles.storage import ManifestStaticFilesStorage, staticfiles_storage
from django.core import checks
from django.core.management.base import SystemCheckError

SERVING = "serving"


def static_files_collected(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    # With DEBUG on the manifest storage links the plain names and needs no manifest; without one and
    # DEBUG off, every page that links a static file fails with "Missing staticfiles manifest entry".
    if settings.DEBUG or not isinstance(staticfiles_storage, ManifestStaticFilesStorage):
        return []
    if staticfiles_storage.read_manifest() is not None:
        return []
    return [
        checks.Error(
            f"no collected static files in {settings.STATIC_ROOT} with DEBUG=false: "
            "run `manage.py collectstatic --noinput`, then start again",
            id="rubrics.E001",
        )
    ]


def refuse_to_serve_on_errors() -> None:
    """Raise SystemCheckError, one line per error, if a `serving` check finds one."""
    errors = [
        e
        for e in checks.run_checks(tags=[SERVING], include_deployment_checks=True)
        if e.is_serious() and not e.is_silenced()
    ]
    if errors:
        raise SystemCheckError("\n".join(f"{e.id}: {e.msg}" for e in errors))

import os

from django.core.wsgi import get_wsgi_application

from rubrics_app.checks import refuse_to_serve_on_errors

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rubrics_app.settings")
application = get_wsgi_application()
# `runserver` loads this module too (WSGI_APPLICATION), so both refuse to serve what would fail.
refuse_to_serve_on_errors()

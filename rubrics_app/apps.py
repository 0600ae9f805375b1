from django.apps import AppConfig
from django.core import checks


class RubricsAppConfig(AppConfig):
    name = "rubrics_app"
    verbose_name = "Rubrics"

    def ready(self) -> None:
        from rubrics_app.checks import SERVING, static_files_collected

        checks.register(static_files_collected, SERVING, deploy=True)

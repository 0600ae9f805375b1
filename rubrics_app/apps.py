from django.apps import AppConfig


class RubricsAppConfig(AppConfig):
    name = "rubrics_app"
    verbose_name = "Rubrics"

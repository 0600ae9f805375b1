from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_save


class RubricsAppConfig(AppConfig):
    name = "rubrics_app"
    verbose_name = "Rubrics"

    def ready(self) -> None:
        from rubrics_app.models import ItemVerdict

        post_save.connect(_item_verdict_saved, sender=ItemVerdict, dispatch_uid="queue-pairs-of-a-verdict")


def _item_verdict_saved(sender: Any, instance: Any, raw: bool = False, **kwargs: Any) -> None:
    """An item verdict saved on its own (not bulk_create, as the import and the sweep write them: they call
    refresh_report_rows) rewrites its grade's review queue pairs, which are derived from the verdicts."""
    if raw:
        return
    from rubrics_app.services.report_rows import APP_MODELS, fill_queue_pairs

    fill_queue_pairs([instance.judge.grade_id], APP_MODELS)

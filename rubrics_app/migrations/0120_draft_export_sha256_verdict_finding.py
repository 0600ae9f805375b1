"""A drafting's export sha256 (a second request with the same export joins the one under way), filled for
the draftings already stored; and the judge's finding on each calibration verdict."""

import hashlib
from typing import Any

from django.db import migrations, models


def fill_export_sha256(apps: Any, schema_editor: Any) -> None:
    # The export is stored as the uploaded bytes decoded as UTF-8 (strictly), so encoding it back gives them.
    draft_model = apps.get_model("rubrics_app", "RubricDraft")
    for draft in draft_model.objects.filter(pr_number=None).exclude(pr_export="").only("pk", "pr_export"):
        digest = hashlib.sha256(draft.pr_export.encode("utf-8")).hexdigest()
        draft_model.objects.filter(pk=draft.pk).update(pr_export_sha256=digest)


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0100_report_rows"),
    ]

    operations = [
        migrations.AddField(
            model_name="rubricdraft",
            name="pr_export_sha256",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.RunPython(fill_export_sha256, migrations.RunPython.noop),
        migrations.AddField(
            model_name="calibrationverdict",
            name="finding",
            field=models.CharField(blank=True, max_length=10),
        ),
    ]

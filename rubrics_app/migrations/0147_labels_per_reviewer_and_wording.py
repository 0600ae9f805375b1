"""Human labels belong to (run, item, criterion wording, reviewer), not to a grade: each label of today (one
per grade and item) moves to its grade's run, with the hash of the item's criterion in the revision the grade
was against ("" when the app does not hold it) and the run's diff hash. Where a reviewer had labelled the
same item of two grades of a run with the same wording, their latest label is kept. The queue's pairs get
their criterion's hash too; the repository a number of labels per pair (1: as before).

The logic is this migration's own (no app code): the hash is sha256 of the criterion's UTF-8 text."""

# ruff: noqa: E501  (the trigger SQL is literal, as it was written at this migration)

import hashlib
from typing import Any

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def _wordings(apps: Any) -> dict[tuple[int, str], str]:
    item = apps.get_model("rubrics_app", "RubricItem")
    return {
        (revision_id, item_id): hashlib.sha256(criterion.encode()).hexdigest()
        for revision_id, item_id, criterion in item.objects.values_list("revision_id", "item_id", "criterion")
    }


def move_labels(apps: Any, schema_editor: Any) -> None:
    label = apps.get_model("rubrics_app", "HumanVerdict")
    pair = apps.get_model("rubrics_app", "QueuePair")
    wordings = _wordings(apps)
    for (revision_id, item_id), wording in wordings.items():
        pair.objects.filter(grade__revision_id=revision_id, item_id=item_id).update(criterion_sha256=wording)
    agreed_share = getattr(settings, "RUNS_AGREED_SAMPLE_PERCENT", 10) / 100
    kept: dict[tuple[int, str, str, int | None], int] = {}
    dropped = []
    rows = label.objects.order_by("at", "pk").values_list(
        "pk", "grade__run_id", "grade__run__diff_sha256", "grade__revision_id", "item_id", "by_id", "queue"
    )
    for pk, run_id, diff, revision_id, item_id, by_id, queue in rows:
        wording = wordings.get((revision_id, item_id), "") if revision_id is not None else ""
        key = (run_id, item_id, wording, by_id)
        if key in kept:
            dropped.append(kept[key])
        kept[key] = pk
        label.objects.filter(pk=pk).update(
            run_id=run_id,
            criterion_sha256=wording,
            diff_sha256=diff,
            inclusion_probability=agreed_share if queue == "agreed" else 1.0,
        )
    label.objects.filter(pk__in=dropped).delete()
    if schema_editor.connection.vendor == "postgresql":
        # The rows written here leave deferred foreign-key checks pending on the table, which PostgreSQL
        # will not ALTER in the same transaction: run them now.
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def move_back(apps: Any, schema_editor: Any) -> None:
    """Undone: each label goes back to its run's current grade (else its newest), one per grade and item
    (the latest kept); a label of a run without a grade is dropped."""
    label = apps.get_model("rubrics_app", "HumanVerdict")
    grade = apps.get_model("rubrics_app", "RunGrade")
    chosen: dict[int, tuple[bool, int]] = {}
    for pk, run_id, is_current in grade.objects.values_list("pk", "run_id", "is_current"):
        chosen[run_id] = max(chosen.get(run_id, (False, 0)), (bool(is_current), pk))
    kept: dict[tuple[int, str], int] = {}
    dropped = []
    for pk, run_id, item_id in label.objects.order_by("at", "pk").values_list("pk", "run_id", "item_id"):
        if run_id not in chosen:
            dropped.append(pk)
            continue
        key = (chosen[run_id][1], item_id)
        if key in kept:
            dropped.append(kept[key])
        kept[key] = pk
    label.objects.filter(pk__in=dropped).delete()
    for (grade_id, _), pk in kept.items():
        label.objects.filter(pk=pk).update(grade_id=grade_id)
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


# SQLite adds a NOT NULL column by rebuilding the table, which drops its triggers: the repository's three
# freeze triggers (as 0130 installs them; they name no column) go back after it, from this copy.
REPOSITORY_TRIGGER_NAMES = (
    "rubrics_freeze_repository_delete",
    "rubrics_freeze_repository_insert",
    "rubrics_freeze_repository_update",
)
REPOSITORY_TRIGGERS_SQLITE = [
    (
        "CREATE TRIGGER rubrics_freeze_repository_delete BEFORE DELETE ON rubrics_app_repository FOR EACH ROW WHEN EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r JOIN rubrics_app_task t ON t.id = r.task_id WHERE t.repository_id = OLD.id AND r.status IN ('approved', 'admitted', 'retired'))\n"
        "            BEGIN SELECT RAISE(ABORT, 'repository holds an approved, admitted or retired rubric revision: it is never deleted'); END"
    ),
    (
        "CREATE TRIGGER rubrics_freeze_repository_insert BEFORE INSERT ON rubrics_app_repository FOR EACH ROW WHEN EXISTS (SELECT 1 FROM rubrics_app_repository p WHERE (p.id = NEW.id OR p.name = NEW.name) AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r JOIN rubrics_app_task t ON t.id = r.task_id WHERE t.repository_id = p.id AND r.status IN ('approved', 'admitted', 'retired')))\n"
        "            BEGIN SELECT RAISE(ABORT, 'repository holds an approved, admitted or retired rubric revision: it is never deleted'); END"
    ),
    (
        "CREATE TRIGGER rubrics_freeze_repository_update BEFORE UPDATE ON rubrics_app_repository FOR EACH ROW\n"
        "            WHEN (NEW.id IS NOT OLD.id AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r JOIN rubrics_app_task t ON t.id = r.task_id WHERE t.repository_id = OLD.id AND r.status IN ('approved', 'admitted', 'retired')))\n"
        "                OR EXISTS (SELECT 1 FROM rubrics_app_repository p WHERE p.id IS NOT OLD.id AND (p.id = NEW.id OR p.name = NEW.name) AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r JOIN rubrics_app_task t ON t.id = r.task_id WHERE t.repository_id = p.id AND r.status IN ('approved', 'admitted', 'retired')))\n"
        "            BEGIN SELECT RAISE(ABORT, 'repository holds an approved, admitted or retired rubric revision: it is never deleted'); END"
    ),
]


def _reinstall_repository_triggers(apps: Any, schema_editor: Any) -> None:
    # Dropped first: removing the column backward is a plain ALTER TABLE DROP COLUMN on SQLite >= 3.35,
    # which keeps the triggers, while adding it forward rebuilds the table, which drops them.
    if schema_editor.connection.vendor == "sqlite":
        for name in REPOSITORY_TRIGGER_NAMES:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")
        for statement in REPOSITORY_TRIGGERS_SQLITE:
            schema_editor.execute(statement)


def _nothing(apps: Any, schema_editor: Any) -> None:
    pass


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0146_api_tokens"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # Backward, the column's removal rebuilds the table again: the triggers go back after it too.
        migrations.RunPython(_nothing, _reinstall_repository_triggers),
        migrations.AddField(
            model_name="repository",
            name="labels_per_pair",
            field=models.PositiveSmallIntegerField(db_default=1, default=1),
        ),
        migrations.RunPython(_reinstall_repository_triggers, _nothing),
        migrations.AddField(
            model_name="queuepair",
            name="criterion_sha256",
            field=models.CharField(blank=True, db_default="", default="", max_length=64),
        ),
        migrations.AlterField(
            model_name="humanverdict",
            name="queue",
            field=models.CharField(
                choices=[
                    ("judges", "The two judges disagree"),
                    ("regrade", "A regrade disagreed with itself"),
                    ("agreed", "Judges agree (sample)"),
                    ("audit", "Audit (random runs, every blocker)"),
                ],
                max_length=10,
            ),
        ),
        migrations.AddField(
            model_name="humanverdict",
            name="run",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="human_verdicts",
                to="rubrics_app.agentrun",
            ),
        ),
        migrations.AddField(
            model_name="humanverdict",
            name="criterion_sha256",
            field=models.CharField(blank=True, default="", max_length=64),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="humanverdict",
            name="diff_sha256",
            field=models.CharField(default="", max_length=64),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="humanverdict",
            name="inclusion_probability",
            field=models.FloatField(default=1.0),
        ),
        migrations.AddField(
            model_name="humanverdict",
            name="adjudicated",
            field=models.BooleanField(default=False),
        ),
        migrations.AlterField(
            model_name="humanverdict",
            name="grade",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="human_verdicts",
                to="rubrics_app.rungrade",
            ),
        ),
        migrations.RunPython(move_labels, move_back),
        migrations.RemoveConstraint(model_name="humanverdict", name="one_human_verdict_per_pair"),
        migrations.RemoveField(model_name="humanverdict", name="grade"),
        migrations.AlterField(
            model_name="humanverdict",
            name="run",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="human_verdicts",
                to="rubrics_app.agentrun",
            ),
        ),
        migrations.AlterModelOptions(
            name="humanverdict",
            options={"ordering": ["run_id", "item_id", "at", "pk"]},
        ),
        migrations.AddConstraint(
            model_name="humanverdict",
            constraint=models.UniqueConstraint(
                condition=models.Q(("by__isnull", False)),
                fields=("run", "item_id", "criterion_sha256", "by", "adjudicated"),
                name="one_label_per_reviewer_and_wording",
            ),
        ),
        migrations.AddConstraint(
            model_name="humanverdict",
            constraint=models.UniqueConstraint(
                condition=models.Q(("by__isnull", True)),
                fields=("run", "item_id", "criterion_sha256", "adjudicated"),
                name="one_command_line_label_per_wording",
            ),
        ),
        migrations.AddIndex(
            model_name="humanverdict",
            index=models.Index(fields=["by", "at"], name="human_verdict_latest"),
        ),
    ]

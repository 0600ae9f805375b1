"""The report kept ready: a repository's whole report, computed by a worker once the runs behind it change,
so that the page's first view reads it instead of computing it (``services.reports.report``)."""

from __future__ import annotations

from django.db import models

from rubrics_app.models.repositories import Repository


class ReportSnapshot(models.Model):
    """A repository's report (no filters) as the page shows it: the JSON of ``ReportResult``,
    compressed, read back through that pydantic model (data, never code: a row that does not validate is
    treated as absent). Found by the report's cache key, which is made of everything the report depends on
    (the runs, rows, labels, revisions, judges and cutoffs, and the code that computes it), so a snapshot is
    never stale: once anything changes, the page looks for a new key, and until a worker has stored that
    one it shows this one marked as being updated (or computes the report itself when none can be
    stored). Written only by ``services.reports.report``, which keeps the newest per repository."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200, unique=True)
    report_json = models.BinaryField()  # zlib of the JSON
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"report of {self.repository_id} ({self.key[-12:]})"

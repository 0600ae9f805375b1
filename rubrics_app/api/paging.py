"""Cursor paging of the API's lists: a page of ``limit`` rows (1 to API_PAGE_MAX) after the ``cursor``
(the last row's id of the page before, given back as ``next_cursor``); a bad value is a problem naming its
field."""

from __future__ import annotations

from django.conf import settings

from rubrics_app.api.problems import ApiProblem, FieldIssue


def after(cursor: str | None) -> int:
    """The id the page starts after: 0 for the first page."""
    if cursor is None or cursor == "":
        return 0
    if not (cursor.isascii() and cursor.isdigit() and len(cursor) <= 18):
        raise ApiProblem(
            422,
            "Invalid cursor",
            "the cursor is the next_cursor of the page before",
            [FieldIssue(field="query.cursor", message="not a cursor this API gave")],
        )
    return int(cursor)


def checked_limit(limit: int) -> int:
    if not 1 <= limit <= settings.API_PAGE_MAX:
        raise ApiProblem(
            422,
            "Invalid limit",
            f"limit is 1 to {settings.API_PAGE_MAX}",
            [FieldIssue(field="query.limit", message=f"1 to {settings.API_PAGE_MAX}")],
        )
    return limit

"""Problem details (RFC 9457): every error the API answers is ``application/problem+json`` with a type,
a title, the status, a detail, and for input errors each field named (``errors``: field and message)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from pydantic import BaseModel

PROBLEM_TYPE = "about:blank"
CONTENT_TYPE = "application/problem+json"


class FieldIssue(BaseModel):
    field: str  # where in the request: "runs[3].files.run.json", "query.limit", "path.name"
    message: str


class Problem(BaseModel):
    type: str = PROBLEM_TYPE
    title: str
    status: int
    detail: str
    errors: list[FieldIssue] = []


class ApiProblem(Exception):
    """Raised by an operation: answered as this problem (``headers`` added, e.g. Retry-After)."""

    def __init__(
        self,
        status: int,
        title: str,
        detail: str,
        errors: list[FieldIssue] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.problem = Problem(title=title, status=status, detail=detail, errors=errors or [])
        self.headers = headers or {}


def problem_response(problem: Problem, headers: dict[str, str] | None = None) -> HttpResponse:
    response = HttpResponse(problem.model_dump_json(), status=problem.status, content_type=CONTENT_TYPE)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def field_name(loc: list[Any] | tuple[Any, ...]) -> str:
    """ninja's error location as a field: ("body", "push", "runs", 3, "files") -> "runs[3].files"."""
    parts = list(loc)
    where = ""
    if parts and parts[0] == "body":
        parts = parts[2:] if len(parts) > 1 else []
    elif parts:
        where = str(parts.pop(0))
    for part in parts:
        if isinstance(part, int):
            where += f"[{part}]"
        else:
            where += f".{part}" if where else str(part)
    return where or "body"


def handle(request: HttpRequest, exc: ApiProblem) -> HttpResponse:
    return problem_response(exc.problem, exc.headers)

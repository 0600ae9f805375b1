"""The NinjaAPI of /api/v1/: its routers, the token auth on every operation, the problem-details answers
for every error, and its URLs (every one open to the login backstop: a token, not a session, decides)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.renderers import JSONRenderer
from ninja.responses import NinjaJSONEncoder

from rubrics_app.api import labels, problems, repositories, runs, sweeps
from rubrics_app.api.auth import TokenAuth
from rubrics_app.api.problems import FieldIssue, Problem, problem_response


class _Encoder(NinjaJSONEncoder):
    """Times to the microsecond, as pydantic writes them (Django's encoder cuts them to milliseconds): a
    label's time is the one its labels file holds."""

    def default(self, o: Any) -> Any:
        if isinstance(o, datetime):
            text = o.isoformat()
            return text.removesuffix("+00:00") + "Z" if text.endswith("+00:00") else text
        return super().default(o)


class _Renderer(JSONRenderer):
    encoder_class = _Encoder


api = NinjaAPI(
    title="Mergeability grading API",
    version="1",
    description="Repositories, tasks, admitted rubrics, agent runs, sweeps, jobs and the report. "
    "Authenticate with a personal access token: `Authorization: Bearer rbk_...` (docs/api.md).",
    auth=TokenAuth(),
    renderer=_Renderer(),
    urls_namespace="api",
)
for module in (repositories, runs, sweeps, labels):
    api.add_router("", module.router)


@api.exception_handler(problems.ApiProblem)
def _api_problem(request: HttpRequest, exc: problems.ApiProblem) -> HttpResponse:
    return problems.handle(request, exc)


@api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    issues = [
        FieldIssue(field=problems.field_name(e.get("loc", ())), message=str(e.get("msg", "invalid")))
        for e in exc.errors
    ]
    detail = "; ".join(f"{i.field}: {i.message}" for i in issues) or "invalid request"
    return problem_response(Problem(title="Invalid request", status=422, detail=detail, errors=issues))


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: Exception) -> HttpResponse:
    problem = Problem(
        title="Unauthorized",
        status=401,
        detail="a live personal access token is needed: Authorization: Bearer rbk_...",
    )
    return problem_response(problem, {"WWW-Authenticate": 'Bearer realm="api"'})


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Exception) -> HttpResponse:
    return problem_response(Problem(title="Not found", status=404, detail=str(exc) or "not found"))


@api.exception_handler(PermissionDenied)
def _forbidden(request: HttpRequest, exc: Exception) -> HttpResponse:
    return problem_response(Problem(title="Forbidden", status=403, detail=str(exc) or "forbidden"))


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    return problem_response(Problem(title="Error", status=exc.status_code, detail=str(exc)))


def urls() -> tuple[list[Any], str, str]:
    patterns, app_name, namespace = api.urls
    for pattern in patterns:
        # Token requests carry no session: the login backstop would send them to the login page.
        if pattern.callback is not None:
            pattern.callback = login_not_required(pattern.callback)
    return patterns, app_name, namespace

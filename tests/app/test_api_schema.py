"""schemathesis's property-based checks of the API's OpenAPI schema against a live server: for requests
generated from the schema (a few examples an operation, to stay within CI's time), no answer is a 5xx and
every answer of a documented status matches the schema. The repository holds graded runs with labels, so
the report's rows and the labels answer with rows, not only empty lists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import schemathesis
from django.contrib.auth.models import User
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from rubrics_app.models import Repository, RubricRevision
from tests.app.api_helpers import token_for
from tests.app.report_helpers import build_runs, label_runs

EXAMPLES = 8  # an operation: the sixteen of them take seconds, not minutes
# The operations of the labels, the report's rows and a sweep's export, among the rest.
NEWER = {
    ("GET", "/api/v1/repositories/{name}/labels"),
    ("POST", "/api/v1/repositories/{name}/labels"),
    ("GET", "/api/v1/repositories/{name}/report/runs"),
    ("GET", "/api/v1/repositories/{name}/report/items"),
    ("GET", "/api/v1/repositories/{name}/sweeps/{sweep_id}/export"),
}

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]


def test_the_api_answers_as_its_schema_says(
    live_server: Any,
    maintainer: User,
    repository: Repository,
    admitted_revision: RubricRevision,
    tmp_path: Path,
) -> None:
    build_runs(tmp_path, repository)
    label_runs(repository)
    secret = token_for(maintainer, repository)
    headers = {"Authorization": f"Bearer {secret}"}
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/v1/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
    assert len(operations) >= 16
    assert {(o.method.upper(), o.full_path) for o in operations} >= NEWER

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))  # fmt: skip
        def check(case: Any) -> None:
            # Most generated names are no repository of the token's: the example one gets half the requests.
            names = case.path_parameters or {}
            if names.get("name") is not None and len(str(names["name"])) % 2:
                names["name"] = repository.name
            case.call_and_validate(
                base_url=live_server.url,
                headers=headers,
                checks=[not_a_server_error, response_schema_conformance],
            )

        check()

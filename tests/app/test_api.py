"""The HTTP API through Django's test client: tokens (scope, role cap, expiry, revocation, use recorded), the
one permission policy (404 outside the scope, 403 above the role), problem details naming the field, the
push's all-or-nothing and idempotence, cursor paging, and the per-token limits (413, 429 with Retry-After,
counted against an injected clock)."""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from rubrics_app.api import auth
from rubrics_app.models import AgentRun, ApiToken, Membership, Repository, Role, RubricRevision, Task
from tests.app.api_helpers import bearer, run_record, token_for

PROBLEM = "application/problem+json"


def post(client: Client, url: str, body: Any, secret: str) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json", headers=bearer(secret))


def test_a_token_lists_only_the_repositories_of_its_scope_with_its_capped_role(
    maintainer: User, repository: Repository, outsider: User, other_repository: Repository
) -> None:
    Membership.objects.create(repository=other_repository, user=maintainer, role=Role.VIEWER)
    secret = token_for(maintainer, repository, role=Role.REVIEWER)
    response = Client().get("/api/v1/repositories", headers=bearer(secret))
    assert response.status_code == 200
    assert response.json() == [{"name": "example-project", "role": "reviewer"}]


def test_a_token_scoped_to_one_repository_gets_404_on_anothers_urls(
    maintainer: User, repository: Repository, task: Task, other_repository: Repository, outsider: User
) -> None:
    # The owner is maintainer of both; the token holds only the first.
    Membership.objects.create(repository=other_repository, user=maintainer, role=Role.MAINTAINER)
    secret = token_for(maintainer, repository)
    client = Client()
    assert client.get("/api/v1/repositories/example-project/tasks", headers=bearer(secret)).status_code == 200
    for url in ("tasks", "runs", "runs/1", "sweeps/1", "jobs/1", "report"):
        response = client.get(f"/api/v1/repositories/other-project/{url}", headers=bearer(secret))
        assert response.status_code == 404, url
        assert response["Content-Type"] == PROBLEM
    response = post(client, "/api/v1/repositories/other-project/runs", {"runs": [run_record(0)]}, secret)
    assert response.status_code == 404


def test_the_owners_role_caps_the_token_on_every_use(
    viewer: User, maintainer: User, repository: Repository, task: Task
) -> None:
    secret = token_for(maintainer, repository, role=Role.MAINTAINER)
    Membership.objects.filter(user=maintainer).update(role=Role.VIEWER)  # demoted after the token was made
    response = post(Client(), "/api/v1/repositories/example-project/runs", {"runs": [run_record(0)]}, secret)
    assert response.status_code == 403
    assert response.json()["status"] == 403
    assert not AgentRun.objects.exists()


def test_a_token_cannot_be_made_with_a_role_above_its_owners(viewer: User, repository: Repository) -> None:
    client = Client()
    client.force_login(viewer)
    response = client.post(
        "/settings/tokens/",
        {"name": "x", "repositories": [repository.pk], "role": Role.MAINTAINER, "days": 30},
    )
    assert response.status_code == 422
    assert "lower than maintainer" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_the_settings_page_shows_a_new_token_once_and_stores_only_its_hash(
    maintainer: User, repository: Repository
) -> None:
    client = Client()
    client.force_login(maintainer)
    response = client.post(
        "/settings/tokens/",
        {"name": "harness", "repositories": [repository.pk], "role": Role.REVIEWER, "days": 7},
    )
    assert response.status_code == 200
    token = ApiToken.objects.get()
    secret = response.context["secret"]
    assert secret.startswith(f"rbk_{token.prefix}_") and secret in response.content.decode()
    assert secret.split("_", 2)[2] not in token.secret_sha256
    assert secret not in client.get("/settings/tokens/").content.decode()
    assert Client().get("/api/v1/repositories", headers=bearer(secret)).status_code == 200
    # Revoked: refused from then on.
    client.post(f"/settings/tokens/{token.pk}/revoke/")
    response = Client().get("/api/v1/repositories", headers=bearer(secret))
    assert response.status_code == 401
    assert response["Content-Type"] == PROBLEM and response["WWW-Authenticate"].startswith("Bearer")


def test_an_expired_or_wrong_token_is_401_and_each_use_is_recorded(
    maintainer: User, repository: Repository
) -> None:
    secret = token_for(maintainer, repository)
    client = Client()
    client.get("/api/v1/repositories", REMOTE_ADDR="10.1.2.3", headers=bearer(secret))
    token = ApiToken.objects.get()
    assert token.last_used_from == "10.1.2.3" and token.uses == 1 and token.last_used_at is not None
    assert client.get("/api/v1/repositories", headers=bearer(secret[:-2] + "xx")).status_code == 401
    assert client.get("/api/v1/repositories").status_code == 401
    ApiToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.get("/api/v1/repositories", headers=bearer(secret)).status_code == 401


def test_a_session_without_a_token_is_not_let_in_and_needs_no_csrf_with_one(
    maintainer: User, repository: Repository, task: Task
) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(maintainer)
    assert client.get("/api/v1/repositories").status_code == 401
    secret = token_for(maintainer, repository)
    response = post(client, "/api/v1/repositories/example-project/runs", {"runs": [run_record(0)]}, secret)
    assert response.status_code == 200, response.content


def test_a_push_is_all_or_nothing_names_every_problem_and_is_idempotent(
    maintainer: User, repository: Repository, task: Task
) -> None:
    secret = token_for(maintainer, repository)
    client = Client()
    url = "/api/v1/repositories/example-project/runs"
    bad = run_record(1)
    del bad["files"]["grade.json"]
    unknown = run_record(2, task_id="no_such_task")
    response = post(client, url, {"runs": [run_record(0), bad, unknown]}, secret)
    assert response.status_code == 422 and response["Content-Type"] == PROBLEM
    fields = [e["field"] for e in response.json()["errors"]]
    assert any(f.startswith("runs[1]") for f in fields), fields
    assert any(f.startswith("runs[2]") for f in fields), fields
    assert not AgentRun.objects.exists()

    good = [run_record(0), run_record(1)]
    first = post(client, url, {"runs": good}, secret).json()
    assert len(first["created"]) == 2 and first["unchanged"] == []
    again = post(client, url, {"runs": good}, secret).json()
    assert again["created"] == [] and sorted(again["unchanged"]) == sorted(first["created"])
    # The same key with another diff is a problem, not a silent replacement.
    changed = run_record(0, diff=b"diff --git a/x b/x\n")
    response = post(client, url, {"runs": [changed]}, secret)
    assert response.status_code == 422
    assert "different workspace.diff" in response.json()["errors"][0]["message"]
    assert AgentRun.objects.count() == 2


def test_an_invalid_body_is_422_naming_the_field(
    maintainer: User, repository: Repository, task: Task
) -> None:
    secret = token_for(maintainer, repository)
    response = post(
        Client(),
        "/api/v1/repositories/example-project/runs",
        {"runs": [{"name": "r", "files": {"run.json": 3}}]},
        secret,
    )
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "runs[0].files.run.json"
    response = post(
        Client(),
        "/api/v1/repositories/example-project/runs",
        {"runs": [{"name": "r", "files": {"evil.sh": "x"}}]},
        secret,
    )
    assert response.json()["errors"][0]["field"] == "runs[0].files.evil.sh"


def test_runs_page_by_cursor_with_filters_and_one_run_shows_its_grades(
    maintainer: User, repository: Repository, task: Task
) -> None:
    secret = token_for(maintainer, repository)
    client = Client()
    runs = [run_record(n) for n in range(5)] + [run_record(0, arm="baseline")]
    post(client, "/api/v1/repositories/example-project/runs", {"runs": runs}, secret)
    seen: list[int] = []
    cursor = ""
    while True:
        page = client.get(
            "/api/v1/repositories/example-project/runs",
            {"arm": "guidance", "limit": "2", "cursor": cursor},
            headers=bearer(secret),
        ).json()
        seen += [r["id"] for r in page["items"]]
        assert all(r["arm"] == "guidance" for r in page["items"])
        if page["next_cursor"] is None:
            break
        cursor = page["next_cursor"]
    assert seen == sorted(AgentRun.objects.filter(arm="guidance").values_list("pk", flat=True))
    detail = client.get(f"/api/v1/repositories/example-project/runs/{seen[0]}", headers=bearer(secret)).json()
    assert detail["task"] == "fix_fraction_gt1" and detail["grades"] == []
    bad = client.get("/api/v1/repositories/example-project/runs", {"cursor": "x"}, headers=bearer(secret))
    assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "query.cursor"


def test_too_many_runs_or_too_large_a_body_is_413(
    maintainer: User, repository: Repository, task: Task, settings: Any
) -> None:
    secret = token_for(maintainer, repository)
    settings.API_MAX_RUNS_PER_PUSH = 2
    url = "/api/v1/repositories/example-project/runs"
    response = post(Client(), url, {"runs": [run_record(n) for n in range(3)]}, secret)
    assert response.status_code == 413 and response.json()["errors"][0]["field"] == "runs"
    settings.API_MAX_BODY_BYTES = 100
    response = post(Client(), url, {"runs": [run_record(0)]}, secret)
    assert response.status_code == 413 and response["Content-Type"] == PROBLEM
    # Over the whole site's cap, the middleware refuses it before any view, as problem details too.
    settings.REQUEST_MAX_BYTES = 50
    response = post(Client(), url, {"runs": [run_record(0)]}, secret)
    assert response.status_code == 413 and response["Content-Type"] == PROBLEM
    assert not AgentRun.objects.exists()


def test_the_rate_limit_counts_requests_per_window_and_says_when_to_retry(
    maintainer: User, repository: Repository, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.API_RATE_LIMIT = 3
    settings.API_RATE_WINDOW_SECONDS = 60
    now = [6000.0 + 40]  # 40 s into a window
    monkeypatch.setattr(auth, "clock", lambda: now[0])
    secret = token_for(maintainer, repository)
    other = token_for(maintainer, repository)
    client = Client()
    codes = [client.get("/api/v1/repositories", headers=bearer(secret)).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    refused = client.get("/api/v1/repositories", headers=bearer(secret))
    assert refused["Retry-After"] == "20" and refused["Content-Type"] == PROBLEM
    assert client.get("/api/v1/repositories", headers=bearer(other)).status_code == 200  # per token
    now[0] += 20  # the next window
    assert client.get("/api/v1/repositories", headers=bearer(secret)).status_code == 200


def test_pulling_the_admitted_rubric_needs_a_maintainer_token(
    maintainer: User, viewer: User, repository: Repository, admitted_revision: RubricRevision
) -> None:
    url = "/api/v1/repositories/example-project/tasks/fix_fraction_gt1/admitted"
    assert (
        Client().get(url, headers=bearer(token_for(viewer, repository, role=Role.VIEWER))).status_code == 403
    )
    answer = Client().get(url, headers=bearer(token_for(maintainer, repository))).json()
    assert answer["revision"] == admitted_revision.number
    assert "rubric.json" in [f["path"] for f in answer["files"]]
    missing = Client().get(
        "/api/v1/repositories/example-project/tasks/nope/admitted",
        headers=bearer(token_for(maintainer, repository)),
    )
    assert missing.status_code == 404 and missing.json()["errors"][0]["field"] == "path.task_id"


def test_the_schema_and_its_docs_page_are_served_without_a_cdn(db: None) -> None:
    client = Client()
    schema = client.get("/api/v1/openapi.json")
    assert schema.status_code == 200
    assert "/api/v1/repositories/{name}/runs" in schema.json()["paths"]
    # No object with a key twice (an int 200 and a "200" both print as "200"): Swagger UI's parser refuses
    # the whole schema then, and the docs page shows "duplicated mapping key" instead of the operations.
    twice: list[str] = []

    def once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in pairs]
        twice.extend(key for key in set(keys) if keys.count(key) > 1)
        return dict(pairs)

    parsed = json.loads(schema.content, object_pairs_hook=once)
    assert not twice, f"keys given twice in the schema: {twice}"
    rows = parsed["paths"]["/api/v1/repositories/{name}/report/runs"]["get"]["responses"]["200"]["content"]
    assert set(rows) == {"application/json", "application/jsonl", "text/csv"}
    export = parsed["paths"]["/api/v1/repositories/{name}/sweeps/{sweep_id}/export"]["get"]["responses"]
    assert "application/zip" in export["200"]["content"]
    page = client.get("/api/v1/docs").content.decode()
    assert "swagger-ui-bundle.js" in page
    assert "cdn" not in page.lower() and "https://" not in page


def test_a_run_with_a_non_utf8_diff_is_pushed_as_base64_and_stored_byte_for_byte(
    maintainer: User, repository: Repository, task: Task
) -> None:
    record = run_record(0)
    diff = record["files"]["workspace.diff"].encode().replace(b"return x", b"return x  # caf\xe9")
    record["files"] = {k: base64.b64encode(v.encode()).decode() for k, v in record["files"].items()}
    record["files"]["workspace.diff"] = base64.b64encode(diff).decode()
    record["encoding"] = "base64"
    secret = token_for(maintainer, repository)
    response = post(Client(), "/api/v1/repositories/example-project/runs", {"runs": [record]}, secret)
    assert response.status_code == 200, response.content
    assert bytes(AgentRun.objects.get().diff.content) == diff
    record["files"]["grade.json"] = "not base64!"
    response = post(Client(), "/api/v1/repositories/example-project/runs", {"runs": [record]}, secret)
    assert response.status_code == 422
    assert response.json()["errors"] == [{"field": "runs[0].files.grade.json", "message": "not base64"}]

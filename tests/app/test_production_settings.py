"""Production settings: check --deploy is clean with the documented environment, weak keys are refused,
HTTPS switches, the Content-Security-Policy (with htmx and the static files still served), login throttling
and the request body cap."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.contrib.staticfiles import finders
from django.db import connection
from django.test import Client
from django.urls import reverse

from rubrics_app.models import Job, RubricItem, RubricRevision
from tests.app.conftest import PASSWORD

ROOT = Path(__file__).resolve().parents[2]
DEPLOYMENT = ROOT / "docs" / "deployment.md"


def production_environment() -> dict[str, str]:
    """The `export NAME=value` lines of the block under <!-- production-environment --> in the docs."""
    text = DEPLOYMENT.read_text()
    block = text.split("<!-- production-environment -->", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    env = {}
    for line in block.splitlines():
        name, value = line.removeprefix("export ").split("=", 1)
        env[name] = value.strip("'")
    return env


def run_python(args: list[str], env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in production_environment() and k != "SECRET_KEY"}
    clean.update({"RUBRICS_VAR_DIR": str(tmp_path / "var"), "PYTHONWARNINGS": "ignore", **env})
    clean.pop("DJANGO_SETTINGS_MODULE", None)
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120
    )


STRONG_KEY = secrets.token_urlsafe(48)


def test_check_deploy_is_clean_with_the_documented_environment(tmp_path: Path) -> None:
    env = production_environment()
    assert env["SECRET_KEY"].startswith("<")  # a placeholder in the docs, never a real key
    env["SECRET_KEY"] = STRONG_KEY
    # Deployed means collected too (rubrics.E001 otherwise, test_static_files.py).
    collected = run_python(["manage.py", "collectstatic", "--noinput", "-v0"], env, tmp_path)
    assert collected.returncode == 0, collected.stderr
    done = run_python(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "System check identified no issues" in done.stdout


def test_without_the_https_switches_check_deploy_warns(tmp_path: Path) -> None:
    env = {"DEBUG": "false", "SECRET_KEY": STRONG_KEY}
    done = run_python(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], env, tmp_path)
    assert done.returncode != 0
    for check in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert check in done.stderr


@pytest.mark.parametrize(
    "key",
    [
        "dev-only-not-secret-set-SECRET_KEY-in-production",
        "django-insecure-" + "x" * 50,
        "short-but-random-Zq8",
        "a" * 60,
    ],
)
def test_debug_false_refuses_a_development_or_weak_key(key: str, tmp_path: Path) -> None:
    done = run_python(["-c", "import rubrics_app.settings"], {"DEBUG": "false", "SECRET_KEY": key}, tmp_path)
    assert done.returncode != 0
    assert "SECRET_KEY is the development key or a weak one" in done.stderr
    # DEBUG=true is development: the key is accepted there.
    done = run_python(["-c", "import rubrics_app.settings"], {"DEBUG": "true", "SECRET_KEY": key}, tmp_path)
    assert done.returncode == 0, done.stderr


def test_without_a_secret_key_one_is_made_and_kept_private(tmp_path: Path) -> None:
    show = ["-c", "import rubrics_app.settings as s; print(s.SECRET_KEY)"]
    first = run_python(show, {"DEBUG": "false"}, tmp_path)
    second = run_python(show, {"DEBUG": "false"}, tmp_path)
    assert first.returncode == 0, first.stderr
    key = first.stdout.strip()
    assert key == second.stdout.strip() and len(key) >= 50
    stored = tmp_path / "var" / "secret_key"
    assert stored.read_text().strip() == key
    assert stored.stat().st_mode & 0o777 == 0o600


def test_the_https_switches_come_from_the_environment(tmp_path: Path) -> None:
    env = production_environment() | {"SECRET_KEY": STRONG_KEY}
    names = [
        "SECURE_SSL_REDIRECT",
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "SECURE_HSTS_SECONDS",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS",
        "SECURE_HSTS_PRELOAD",
        "SECURE_PROXY_SSL_HEADER",
    ]
    show = ["-c", f"import rubrics_app.settings as s; print([getattr(s, n, None) for n in {names!r}])"]
    done = run_python(show, env, tmp_path)
    assert done.stdout.strip() == str(
        [True, True, True, 31536000, True, True, ("HTTP_X_FORWARDED_PROTO", "https")]
    )
    done = run_python(show, {}, tmp_path)
    assert done.stdout.strip() == str([False, False, False, 0, False, False, None])


# --- Content-Security-Policy ------------------------------------------------------------------------------


class _Inline(HTMLParser):
    """What a strict Content-Security-Policy would block in a page, and the static files it loads."""

    def __init__(self) -> None:
        super().__init__()
        self.blocked: list[str] = []
        self.static: list[str] = []
        self.meta: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name, _ in attrs:
            if name == "style" or name.startswith("on") or name.startswith("hx-on"):
                self.blocked.append(f"<{tag} {name}=...>")
            if name == "hx-vals" and (values[name] or "").startswith("js:"):
                self.blocked.append(f"<{tag} hx-vals=js:...>")
        if tag == "style":
            self.blocked.append("<style>")
        if tag == "script":
            if not values.get("src"):
                self.blocked.append("<script> without src")
            else:
                self.static.append(values["src"] or "")
        if tag == "link" and values.get("rel") == "stylesheet":
            self.static.append(values.get("href") or "")
        if tag == "meta" and values.get("name"):
            self.meta[values["name"] or ""] = values.get("content") or ""


def pages(revision: RubricRevision) -> list[str]:
    repo = revision.task.repository_id
    diff = revision.calibration_diffs.get(kind="lazy")
    job = Job.objects.create(kind="validate_revision", repository_id=repo, revision=revision)
    return [
        reverse("rubrics:repository_list"),
        reverse("rubrics:repository_detail", args=[repo]),
        reverse("rubrics:task_detail", args=[repo, revision.task_id]),
        reverse("rubrics:revision_detail", args=[repo, revision.pk]),
        reverse("rubrics:revision_compare", args=[repo, revision.pk]),
        reverse("rubrics:calibration_diff", args=[repo, revision.pk, diff.pk]),
        reverse("rubrics:job_detail", args=[repo, job.pk]),
    ]


def test_every_page_runs_under_the_policy_with_htmx_and_its_static_files(
    maintainer: User, draft_revision: RubricRevision, make_revision: Any
) -> None:
    make_revision("admitted")  # the page of a revision with history, compare and export buttons
    client = Client()
    client.force_login(maintainer)
    anonymous = Client().get(reverse("login"))
    for response in [anonymous, *(client.get(page) for page in pages(draft_revision))]:
        assert response.status_code == 200, response
        policy = response["Content-Security-Policy"]
        assert "default-src 'self'" in policy and "script-src 'self'" in policy
        assert "style-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        page = _Inline()
        page.feed(response.content.decode())
        assert page.blocked == [], (response.request["PATH_INFO"], page.blocked)
        assert page.meta["htmx-config"] == '{"includeIndicatorStyles": false}'
        assert any(re.search(r"/htmx[-.0-9a-z]*\.js$", src) for src in page.static)
        for url in page.static:
            assert url.startswith("/static/"), url
            assert finders.find(url.removeprefix("/static/")), url  # served from this origin


# --- login throttling --------------------------------------------------------------------------------------


def login(client: Client, username: str, password: str, address: str = "192.0.2.1") -> Any:
    data = {"username": username, "password": password}
    return client.post(reverse("login"), data, REMOTE_ADDR=address)


def test_failed_logins_lock_that_username_from_that_address_out(maintainer: User, settings: Any) -> None:
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert login(client, "maintainer", "wrong").status_code == 200  # the form, with its error
    assert login(client, "maintainer", "wrong").status_code == 429
    # Locked out: even the right password is refused, from that address...
    assert login(client, "maintainer", PASSWORD).status_code == 429
    assert "_auth_user_id" not in client.session
    # ...but not from another one, and not for another user.
    assert login(Client(), "maintainer", PASSWORD, address="198.51.100.7").status_code == 302


def test_a_successful_login_resets_the_count(maintainer: User, settings: Any) -> None:
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        login(client, "maintainer", "wrong")
    assert login(client, "maintainer", PASSWORD).status_code == 302
    client.logout()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert login(client, "maintainer", "wrong").status_code == 200


# --- request body cap --------------------------------------------------------------------------------------


def test_a_body_over_the_cap_is_refused_before_the_view_reads_it(
    maintainer: User, draft_revision: RubricRevision, settings: Any
) -> None:
    settings.REQUEST_MAX_BYTES = 2000
    item = draft_revision.items.get(item_id="B1")
    url = reverse("rubrics:item_edit", args=[draft_revision.task.repository_id, item.pk])
    client = Client()
    client.force_login(maintainer)
    data = {"version": "1", "item_id": "B1", "criterion": "x" * 3000, "evidence": "e"}
    response = client.post(url, data)
    assert response.status_code == 413
    assert response.content == b"Request body too large: the limit is 2000 bytes."
    assert RubricItem.objects.get(pk=item.pk).criterion == item.criterion
    data["criterion"] = "within the cap"
    assert client.post(url, data).status_code == 302
    assert RubricItem.objects.get(pk=item.pk).criterion == "within the cap"


@pytest.mark.parametrize("length", ["²", "9" * 5000, "-1", "x"])
def test_a_bad_content_length_is_a_400(maintainer: User, length: str) -> None:
    client = Client()
    client.force_login(maintainer)
    assert client.post(reverse("rubrics:repository_list"), {}, CONTENT_LENGTH=length).status_code == 400


def test_a_login_without_a_request_is_not_throttled_but_still_checked(maintainer: User) -> None:
    # No address to count by (the test client's login(), a management command): the password decides.
    assert Client().login(username="maintainer", password=PASSWORD)
    assert not Client().login(username="maintainer", password="wrong")


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's JIT")
def test_the_app_s_postgresql_sessions_run_without_the_jit() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone() == ("off",)

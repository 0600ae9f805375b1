"""Static files with DEBUG=false: after collectstatic, the app itself (WhiteNoise) serves the hashed,
compressed files its pages link, with a cache header that lets browsers keep them (issue 21 §8).

The server is a real `manage.py runserver` process with the production storage, over real HTTP; the rest
of the suite uses plain storage and never runs collectstatic (tests/app/conftest.py)."""

from __future__ import annotations

import gzip
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.local_server import free_port

ROOT = Path(__file__).resolve().parents[2]
START_SECONDS = 60


def production_env(var_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "SECRET_KEY", "DEBUG"}}
    env.update(
        {
            "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(48),
            "RUBRICS_VAR_DIR": str(var_dir),
            "PYTHONWARNINGS": "ignore",
        }
    )
    env.pop("DATABASE_URL", None)  # the login page reads no table; SQLite in var_dir if anything did
    env.pop("CELERY_BROKER_URL", None)
    return env


@pytest.fixture(scope="module")
def production_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    var_dir = tmp_path_factory.mktemp("var")
    env = production_env(var_dir)
    collected = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert collected.returncode == 0, collected.stderr
    port = free_port()
    log = var_dir / "server.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"runserver did not start:\n{log.read_text()}")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}", var_dir / "staticfiles"
    finally:
        server.terminate()
        server.wait(timeout=30)


def get(url: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()


def test_the_page_links_the_hashed_css_and_the_app_serves_it_for_years(
    production_server: tuple[str, Path],
) -> None:
    base, static_root = production_server
    status, _, page = get(f"{base}/accounts/login/")
    assert status == 200
    links = re.findall(r'<link rel="stylesheet" href="([^"]+)">', page.decode())
    css = [href for href in links if "/rubrics/app." in href]
    assert len(css) == 1, links
    # The name carries the content's hash (collectstatic's manifest), never the plain app.css.
    match = re.fullmatch(r"/static/rubrics/app\.([0-9a-f]{12})\.css", css[0])
    assert match, css[0]
    assert (static_root / "rubrics" / f"app.{match.group(1)}.css").is_file()

    status, headers, body = get(base + css[0])
    assert status == 200
    assert headers["content-type"].startswith("text/css")
    assert "max-age=315360000" in headers["cache-control"] and "immutable" in headers["cache-control"]
    assert body == (ROOT / "static" / "rubrics" / "app.css").read_bytes()


def test_the_css_is_sent_compressed_to_a_browser_that_accepts_gzip(
    production_server: tuple[str, Path],
) -> None:
    base, _ = production_server
    _, _, page = get(f"{base}/accounts/login/")
    href = re.search(r'href="(/static/rubrics/app\.[0-9a-f]{12}\.css)"', page.decode())
    assert href
    status, headers, body = get(base + href.group(1), **{"Accept-Encoding": "gzip"})
    assert status == 200 and headers["content-encoding"] == "gzip"
    assert gzip.decompress(body) == (ROOT / "static" / "rubrics" / "app.css").read_bytes()


def test_the_favicon_redirects_to_its_hashed_name(production_server: tuple[str, Path]) -> None:
    base, _ = production_server

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as moved:
        opener.open(f"{base}/favicon.ico", timeout=30)
    location = moved.value.headers["Location"]
    moved.value.close()
    assert re.fullmatch(r"/static/rubrics/favicon\.[0-9a-f]{12}\.ico", location), location
    status, _, _ = get(base + location)
    assert status == 200


def manage(var_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=production_env(var_dir),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_without_collectstatic_runserver_refuses_to_start_with_one_line(tmp_path: Path) -> None:
    # --noreload: a check error then ends the process (the autoreloader would wait for a file change).
    result = manage(tmp_path, "runserver", f"127.0.0.1:{free_port()}", "--noreload")
    assert result.returncode == 1, result.stdout + result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "rubrics.E001" in line and "run `manage.py collectstatic --noinput`" in line


def test_without_collectstatic_the_wsgi_entry_refuses_to_load(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", "import rubrics_app.wsgi"],
        cwd=ROOT,
        env=production_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1
    assert "run `manage.py collectstatic --noinput`" in result.stderr.strip().splitlines()[-1]


def test_without_collectstatic_the_other_commands_still_run(tmp_path: Path) -> None:
    # migrate and check run every ordinary check; a deployment runs them before collectstatic.
    for args in (["check"], ["migrate", "--plan"]):
        result = manage(tmp_path, *args)
        assert result.returncode == 0, result.stderr
    listed = manage(tmp_path, "check", "--deploy", "--tag", "serving")
    assert listed.returncode == 1
    assert "rubrics.E001" in listed.stderr

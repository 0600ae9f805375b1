"""One settings file, read from the environment with typed readers (SQLite + serverless broker by default)."""

from __future__ import annotations

import os
import secrets
import tempfile
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.utils.csp import CSP

from grading import InputError as _InputError
from grading import parse_provider_limits as _parse_provider_limits

BASE_DIR = Path(__file__).resolve().parent.parent


class ImproperlyConfiguredEnv(Exception):
    pass


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw in {"1", "true", "True"}:
        return True
    if raw in {"0", "false", "False"}:
        return False
    raise ImproperlyConfiguredEnv(f"{name}={raw!r}: use true/false or 1/0")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfiguredEnv(f"{name}={raw!r}: not an integer") from None


def env_float(name: str, default: float, *, low: float, high: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfiguredEnv(f"{name}={raw!r}: not a number") from None
    if not low <= value <= high:  # also refuses NaN
        raise ImproperlyConfiguredEnv(f"{name}={raw!r}: must be from {low:g} to {high:g}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return [part.strip() for part in raw.split(",") if part.strip()]


# Runtime data of the embedded default (SQLite file, broker folders, its secret key) lives here.
VAR_DIR = Path(env_str("RUBRICS_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", False)

# Set by scripts/demo.sh only: the login page then names the demo's users (those load_demo made, with its
# default password), when they exist. Never set it where the users and passwords are real.
RUBRICS_DEMO = env_bool("RUBRICS_DEMO", False)

# The key this project once shipped as its default: public, so it signs nothing outside DEBUG.
DEVELOPMENT_SECRET_KEY = "dev-only-not-secret-set-SECRET_KEY-in-production"


def _weak_secret_key(key: str) -> bool:
    # Django's own measure of a weak key (security.W009), made a refusal to start.
    return (
        key == DEVELOPMENT_SECRET_KEY
        or key.startswith("django-insecure-")
        or len(key) < 50
        or len(set(key)) < 5
    )


def _local_secret_key(path: Path) -> str:
    """A random key made on first start and kept in VAR_DIR (readable by this account only): the embedded
    default never signs sessions with a key anyone else knows. Machines that share sessions set SECRET_KEY."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(48)
    # Written whole to a private file, then linked into place: a process starting at the same moment (a
    # worker, the web server, another test worker) sees either no file or the whole key, never an empty one.
    descriptor, staged = tempfile.mkstemp(dir=path.parent, prefix=".secret_key.")
    try:
        with os.fdopen(descriptor, "w") as out:
            out.write(key + "\n")
        try:
            os.link(staged, path)
        except FileExistsError:  # another process made it first: theirs is the key
            return path.read_text().strip()
    finally:
        os.unlink(staged)
    return key


if os.environ.get("SECRET_KEY"):
    SECRET_KEY = os.environ["SECRET_KEY"]
    if not DEBUG and _weak_secret_key(SECRET_KEY):
        raise ImproperlyConfiguredEnv(
            "SECRET_KEY is the development key or a weak one (under 50 characters, under 5 distinct, or "
            "django-insecure-...): with DEBUG=false set a long random one, e.g. "
            "python -c 'import secrets; print(secrets.token_urlsafe(48))'"
        )
else:
    SECRET_KEY = _local_secret_key(VAR_DIR / "secret_key")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# HTTPS, off by default (the embedded default serves plain HTTP on localhost); see docs/deployment.md.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# Behind a proxy that terminates TLS and sets X-Forwarded-Proto (and strips it from clients' requests).
if env_bool("SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # Before staticfiles: runserver leaves /static/ to WhiteNoise too, so it serves as production does.
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "axes",
    "rubrics_app",
]

MIDDLEWARE = [
    # First: a body over REQUEST_MAX_BYTES is refused before anything reads it.
    "rubrics_app.middleware.RequestBodyLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Static files (STATIC_ROOT, filled by collectstatic) with any DEBUG, before the rest of the stack reads
    # sessions or the database for them.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A backstop: every view also says @login_required; a new view that forgets is still closed.
    "rubrics_app.middleware.LoginRequiredMiddleware",
    # After the login check (an anonymous request goes to the login page whatever it asks), before any view
    # reads a parameter: a control character in the query or the path is a 400.
    "rubrics_app.middleware.RequestTextMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: turns a locked-out login into its 429 response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "rubrics_app.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "rubrics_app.wsgi.application"

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'rubrics.sqlite3'}"), conn_max_age=60
    )
}

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default has two writers, the web server and the worker: WAL lets readers run beside a
    # writer, IMMEDIATE takes the write lock when a transaction starts (no failed lock upgrade halfway), and
    # the timeout makes the other writer wait instead of failing with "database is locked".
    # recursive_triggers: the rows a REPLACE deletes fire DELETE triggers, so the frozen-revision triggers
    # see them (migration 0006). Django turns foreign_keys on for every connection itself.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA recursive_triggers=ON",
    }
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # PostgreSQL's JIT compiles any plan it estimates as costly: at 100,000 runs each report and queue
    # query spent 0.3 to 0.6 s compiling, more than it saved (docs/benchmarks.md). Off for the app's sessions
    # (a libpq startup option; a role or server setting does the same for every client).
    DATABASES["default"].setdefault("OPTIONS", {})["options"] = "-c jit=off"

AUTH_PASSWORD_VALIDATORS: list[dict[str, str]] = []
# Login throttling (django-axes): AXES_FAILURE_LIMIT failed logins for one username from one address lock
# that pair out for AXES_COOLOFF_MINUTES. Per pair, so nobody locks a maintainer out from elsewhere.
AUTHENTICATION_BACKENDS = [
    "rubrics_app.auth.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_ENABLED = env_bool("AXES_ENABLED", True)
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("AXES_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# How many proxies in front of the app set X-Forwarded-For (0: use the connection's address).
AXES_IPWARE_PROXY_COUNT = env_int("AXES_PROXY_COUNT", 0) or None
AXES_IPWARE_META_PRECEDENCE_ORDER = (
    ["HTTP_X_FORWARDED_FOR", "REMOTE_ADDR"] if AXES_IPWARE_PROXY_COUNT else ["REMOTE_ADDR"]
)
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# `manage.py collectstatic` copies every static file here with a hash of its content in its name, plus a
# gzipped copy (and a brotli one when brotli is installed); WhiteNoise serves them with a cache header of
# ten years, since a changed file gets a new name. With DEBUG=false the pages link only those names: a
# deployment runs collectstatic after each update (docs/deployment.md). With DEBUG on, the unhashed files
# are served from static/ and the apps as they are. The tests use plain storage (tests/app/conftest.py).
STATIC_ROOT = VAR_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# Content-Security-Policy (Django's own middleware): only this origin's scripts, styles and images, no
# inline script or style (htmx is a static file; its indicator styles are off, see base.html), no framing.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "object-src": [CSP.NONE],
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Celery: a broker that needs no server by default (kombu's filesystem transport), Redis in production.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = (
    {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }
    if CELERY_BROKER_URL.startswith("filesystem")
    else {}
)
# A broker that is down or hung must not hold the request that starts a job: each connect and each read of
# a Redis broker waits at most BROKER_SOCKET_TIMEOUT_SECONDS (kombu's default is for ever), and a publish is
# retried at most twice, a fifth of a second apart, before services.jobs fails the job as "the job queue was
# unreachable". Measured: a closed port fails in 0.2 s, a server that accepts and never answers in this.
BROKER_SOCKET_TIMEOUT_SECONDS = env_int("BROKER_SOCKET_TIMEOUT_SECONDS", 3)
if BROKER_SOCKET_TIMEOUT_SECONDS <= 0:
    raise ImproperlyConfiguredEnv("BROKER_SOCKET_TIMEOUT_SECONDS must be above 0")
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CELERY_BROKER_TRANSPORT_OPTIONS |= {
        "socket_timeout": BROKER_SOCKET_TIMEOUT_SECONDS,
        "socket_connect_timeout": BROKER_SOCKET_TIMEOUT_SECONDS,
    }
CELERY_BROKER_CONNECTION_TIMEOUT = BROKER_SOCKET_TIMEOUT_SECONDS
CELERY_TASK_PUBLISH_RETRY = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}
# Tests give every session a queue of its own, so a demo worker never takes a test's job (or the reverse).
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "rubrics")
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True  # job state lives in the Job table, which the pages poll
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# Jobs never hang: a running job's worker touches Job.heartbeat_at every JOB_HEARTBEAT_SECONDS; every worker
# also runs the reaper every JOB_REAP_EVERY_SECONDS (and once when it starts), which queues again a job whose
# heartbeat is older than JOB_LOST_AFTER_SECONDS (its worker died: kill -9, OOM, a lost machine), or fails
# it with "worker lost" once it has been claimed JOB_MAX_ATTEMPTS times. A thread of each worker rather than
# Celery beat: no extra process to run (and exactly once), and no broker traffic every few seconds (kombu's
# filesystem transport can read a message file before its writer has filled it).
JOB_HEARTBEAT_SECONDS = env_int("JOB_HEARTBEAT_SECONDS", 10)
JOB_LOST_AFTER_SECONDS = env_int("JOB_LOST_AFTER_SECONDS", 60)
JOB_REAP_EVERY_SECONDS = env_int("JOB_REAP_EVERY_SECONDS", 30)
JOB_MAX_ATTEMPTS = env_int("JOB_MAX_ATTEMPTS", 2)
# A queued job that no worker claimed within this many seconds of its message being sent (or of its creation,
# when the process that made it died before sending) is sent again by the reaper: the broker lost the message
# (a Redis restarted without persistence) or never had it. A duplicate of a message still waiting in a busy
# queue is harmless (the claim is conditional), so the job is sent again, never failed, for waiting.
JOB_QUEUED_LOST_AFTER_SECONDS = env_int("JOB_QUEUED_LOST_AFTER_SECONDS", 600)
if not 0 < JOB_HEARTBEAT_SECONDS * 2 <= JOB_LOST_AFTER_SECONDS:
    raise ImproperlyConfiguredEnv(
        f"JOB_LOST_AFTER_SECONDS={JOB_LOST_AFTER_SECONDS} must be at least twice "
        f"JOB_HEARTBEAT_SECONDS={JOB_HEARTBEAT_SECONDS} (and both above 0), or live jobs look lost"
    )
if JOB_REAP_EVERY_SECONDS <= 0 or JOB_MAX_ATTEMPTS <= 0 or JOB_QUEUED_LOST_AFTER_SECONDS <= 0:
    raise ImproperlyConfiguredEnv(
        "JOB_REAP_EVERY_SECONDS, JOB_MAX_ATTEMPTS and JOB_QUEUED_LOST_AFTER_SECONDS must be above 0"
    )

# SQLite will not create its file's folder, nor kombu its queue folders: make them on first start.
_EMBEDDED_BROKER = CELERY_BROKER_URL.startswith("filesystem")
if _EMBEDDED_BROKER or DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(parents=True, exist_ok=True)
if _EMBEDDED_BROKER:
    for _folder in ("queue", "processed", "control"):
        (BROKER_DIR / _folder).mkdir(parents=True, exist_ok=True)

# Uploads of rubric zips.
# Where drafting (§6) reads merged PRs: GitHub's REST API, or a GitHub Enterprise server's. Set by whoever
# runs the workers, never by a page: the worker sends the repository's GitHub token there.
DRAFT_GITHUB_API_URL = env_str("DRAFT_GITHUB_API_URL", "https://api.github.com")
RUBRIC_UPLOAD_MAX_BYTES = env_int("RUBRIC_UPLOAD_MAX_BYTES", 5 * 1024 * 1024)
# Request bodies: the largest upload plus room for the form around it, refused by its Content-Length before
# Django reads or spools a byte (the front server should cap at the same size: docs/deployment.md).
REQUEST_MAX_BYTES = env_int("REQUEST_MAX_BYTES", RUBRIC_UPLOAD_MAX_BYTES + 256 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024  # a form's fields, without its files
DATA_UPLOAD_MAX_NUMBER_FIELDS = 200
DATA_UPLOAD_MAX_NUMBER_FILES = 2  # one upload; two for SWE-bench (predictions.jsonl and the reports zip)
FILE_UPLOAD_MAX_MEMORY_SIZE = RUBRIC_UPLOAD_MAX_BYTES  # never spooled to disk, since capped anyway
RUBRIC_ZIP_MAX_UNCOMPRESSED_BYTES = env_int("RUBRIC_ZIP_MAX_UNCOMPRESSED_BYTES", 50 * 1024 * 1024)
RUBRIC_ZIP_MAX_MEMBERS = env_int("RUBRIC_ZIP_MAX_MEMBERS", 200)
# Agent-run uploads (zips of run directories): diffs can be tens of MB each.
RUNS_UPLOAD_MAX_BYTES = env_int("RUNS_UPLOAD_MAX_BYTES", 200 * 1024 * 1024)
RUNS_ZIP_MAX_UNCOMPRESSED_BYTES = env_int("RUNS_ZIP_MAX_UNCOMPRESSED_BYTES", 1024 * 1024 * 1024)
RUNS_ZIP_MAX_MEMBERS = env_int("RUNS_ZIP_MAX_MEMBERS", 20000)
# What one member of any uploaded zip may inflate to (a 1 MB zip can declare a diff of nearly 1 GiB).
ZIP_MAX_MEMBER_BYTES = env_int("ZIP_MAX_MEMBER_BYTES", 64 * 1024 * 1024)
# Percent of the (run, item) pairs where the judges agree that the review queue offers for labelling.
RUNS_AGREED_SAMPLE_PERCENT = env_int("RUNS_AGREED_SAMPLE_PERCENT", 10)
# Pairs per page of the review queue's list (the one-per-screen flow runs across pages).
RUNS_QUEUE_PAGE_SIZE = env_int("RUNS_QUEUE_PAGE_SIZE", 100)
# Hours between the evidence checks Celery beat sends (re-review, §6) for every repository with a
# checkout; 0: never.
RUNS_EVIDENCE_CHECK_HOURS = env_int("RUNS_EVIDENCE_CHECK_HOURS", 24)
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = (
    {
        "check-evidence": {
            "task": "rubrics_app.tasks.check_evidence_everywhere",
            "schedule": RUNS_EVIDENCE_CHECK_HOURS * 3600.0,
        }
    }
    if RUNS_EVIDENCE_CHECK_HOURS > 0
    else {}
)

# Sweeps (grading every agent run of a task or repository; docs/sweeps.md). Per provider (the judge spec's
# prefix): judge calls in flight at once and, after "/", calls started per minute (0 or absent: no rate
# limit). A provider not listed gets SWEEP_DEFAULT_CONCURRENCY and no rate limit. The limits hold across
# every worker through SWEEP_LIMITS_REDIS_URL (the broker's Redis when the broker is Redis); without one
# (the embedded filesystem broker) each worker process keeps its own.
SWEEP_PROVIDER_LIMITS_TEXT = env_str("SWEEP_PROVIDER_LIMITS", "anthropic=4/50,openai=4/60,claude-code=1")
try:
    SWEEP_PROVIDER_LIMITS = _parse_provider_limits(SWEEP_PROVIDER_LIMITS_TEXT)
except _InputError as _exc:
    raise ImproperlyConfiguredEnv(str(_exc)) from None
SWEEP_LIMITS_REDIS_URL = env_str(
    "SWEEP_LIMITS_REDIS_URL",
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else "",
)
if SWEEP_LIMITS_REDIS_URL and not SWEEP_LIMITS_REDIS_URL.startswith(("redis://", "rediss://", "unix://")):
    raise ImproperlyConfiguredEnv(
        "SWEEP_LIMITS_REDIS_URL must be a redis://, rediss:// or unix:// URL, or empty"
    )
SWEEP_LIMITS_KEY_PREFIX = env_str("SWEEP_LIMITS_KEY_PREFIX", "rubrics:sweep-limits")
SWEEP_DEFAULT_CONCURRENCY = env_int("SWEEP_DEFAULT_CONCURRENCY", 4)
if SWEEP_DEFAULT_CONCURRENCY < 1:
    raise ImproperlyConfiguredEnv("SWEEP_DEFAULT_CONCURRENCY must be at least 1")
# The share of runs the second judge grades (1: every run), and of cache hits judged again (§9).
SWEEP_SECOND_JUDGE_SAMPLE = env_float("SWEEP_SECOND_JUDGE_SAMPLE", 1.0, low=0.0, high=1.0)
SWEEP_REGRADE_SAMPLE = env_float("SWEEP_REGRADE_SAMPLE", 0.0, low=0.0, high=1.0)
# One judge call: seconds before the SDK gives up on it, and the SDK's retries on 429/529/5xx and timeouts.
SWEEP_JUDGE_TIMEOUT_SECONDS = env_float("SWEEP_JUDGE_TIMEOUT_SECONDS", 120.0, low=0.1, high=3600.0)
SWEEP_JUDGE_MAX_RETRIES = env_int("SWEEP_JUDGE_MAX_RETRIES", 4)
# Batch sweeps: how many runs wait for their judge at once (the size of a batch; a grading thread each, and
# a database connection each for the verdict cache), and how often the job polls a batch.
SWEEP_BATCH_SIZE = env_int("SWEEP_BATCH_SIZE", 100)
if SWEEP_BATCH_SIZE < 1:
    raise ImproperlyConfiguredEnv("SWEEP_BATCH_SIZE must be at least 1")
SWEEP_BATCH_POLL_SECONDS = env_float("SWEEP_BATCH_POLL_SECONDS", 30.0, low=0.01, high=3600.0)

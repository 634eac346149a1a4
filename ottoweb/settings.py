"""ottoweb settings: one file, typed environment helpers, zero-config SQLite default.

Every setting a user may change is an environment variable listed in docs/configuration.md.
All state (database, broker folders, logs, caches) lives under OTTO_DATA_DIR.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent


def envbool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def envint(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


def envfloat(name: str, default: float) -> float:
    value = os.environ.get(name)
    return float(value) if value not in (None, "") else default


def envstr(name: str, default: str) -> str:
    value = os.environ.get(name)
    return value if value not in (None, "") else default


# pytest sets PYTEST_VERSION: a test run then gets its own data folder (never the developer's var/,
# and two runs never share a database file) and inline compaction unless a test asks for the worker.
TESTING = "PYTEST_VERSION" in os.environ
if TESTING:
    if "OTTO_DATA_DIR" not in os.environ:
        _run_dir = tempfile.mkdtemp(prefix="ottoweb-test-")
        os.environ["OTTO_DATA_DIR"] = os.environ["OTTO_TEST_RUN_DIR"] = _run_dir
    # pytest-xdist's processes (`make test -n`) inherit the run's folder: each takes one of its own in
    # it (a process it starts, given its folder or inheriting this one, keeps what it is given).
    _xdist = os.environ.get("PYTEST_XDIST_WORKER")
    if _xdist and os.environ["OTTO_DATA_DIR"] == os.environ.get("OTTO_TEST_RUN_DIR"):
        os.environ["OTTO_DATA_DIR"] = str(Path(os.environ["OTTO_DATA_DIR"]) / _xdist)
    os.environ.setdefault("OTTO_COMPACTION", "inline")
DATA_DIR = Path(envstr("OTTO_DATA_DIR", str(BASE_DIR / "var"))).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)
# tiktoken's own cache, used only if the package that ships its BPE file is missing (memory/engine/tokens.py).
os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(DATA_DIR / "tiktoken"))
# The packaged embedding model's files are gathered (and sha256-verified) here on first use; in the
# environment, so the processes this one starts (tests' servers, the bench's) share them.
os.environ.setdefault("OTTO_MODEL_CACHE", str(DATA_DIR / "models"))
# Never let a model hub download sit in a retry loop: offline must fail fast (docs/decisions.md, foundation 3).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("FASTEMBED_CACHE_PATH", str(DATA_DIR / "fastembed"))


def _secret_key() -> str:
    configured = os.environ.get("OTTO_SECRET_KEY")
    if configured:
        return configured
    path = DATA_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = envbool("OTTO_DEBUG", False)
# Loopback only by default ("testserver", the test client's host, is added by Django's test setup,
# never in production).
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"] + [
    h for h in envstr("OTTO_ALLOWED_HOSTS", "").split(",") if h
]
CSRF_TRUSTED_ORIGINS = [o for o in envstr("OTTO_CSRF_TRUSTED_ORIGINS", "").split(",") if o]
# Behind a TLS proxy: cookies only over HTTPS, and the proxy's header says a request came over it
# (OTTO_PROXY_SSL_HEADER=X-Forwarded-Proto: "https" there means HTTPS; only when the proxy always
# sets it, or a client could claim HTTPS). OTTO_HSTS_SECONDS > 0 asks browsers to use HTTPS only.
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = envbool("OTTO_SECURE_COOKIES", False)
_PROXY_SSL_HEADER = envstr("OTTO_PROXY_SSL_HEADER", "")
if _PROXY_SSL_HEADER:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _PROXY_SSL_HEADER.upper().replace("-", "_"), "https")
SECURE_HSTS_SECONDS = envint("OTTO_HSTS_SECONDS", 0)

INSTALLED_APPS = [
    # First, so its `runserver` (TCP_NODELAY) is the one manage.py runs.
    "ottoweb",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "ninja",
    "accounts",
    "memory",
    "lessons",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "ottoweb.security.ContentSecurityPolicy",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "ottoweb.api.HeadAsGet",
    "ottoweb.api.MethodNotAllowedAsJson",
    # Last, so it sees the user and token the views resolved.
    "accounts.audit.AuditMiddleware",
]

ROOT_URLCONF = "ottoweb.urls"
WSGI_APPLICATION = "ottoweb.wsgi.application"
ASGI_APPLICATION = "ottoweb.asgi.application"

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
    }
]

DB = envstr("DB", "sqlite")
if DB == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": envstr("OTTO_PG_NAME", "ottoweb"),
            "USER": envstr("OTTO_PG_USER", "postgres"),
            "PASSWORD": envstr("OTTO_PG_PASSWORD", ""),
            "HOST": envstr("OTTO_PG_HOST", "127.0.0.1"),
            "PORT": envstr("OTTO_PG_PORT", "5432"),
            "CONN_MAX_AGE": 60,
        }
    }
else:
    DATABASES = {
        "default": {
            "ENGINE": "ottoweb.db",
            "NAME": DATA_DIR / "ottoweb.sqlite3",
            # IMMEDIATE takes the write lock when a transaction starts, so two writers queue on
            # busy_timeout (OTTO_SQLITE_BUSY_SECONDS) instead of one failing with "database is locked"
            # on upgrade; past it the write fails and is retried (a job) or answered 503 (a request).
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": envint("OTTO_SQLITE_BUSY_SECONDS", 10)},
            # Seconds a thread keeps its connection. 0 (Django's default) suits servers that start a
            # thread per request (runserver); the production server's fixed thread pool keeps them
            # (ottoweb/asgi.py sets 600): opening one costs ≈ 1.5 ms (sqlite-vec, pragmas).
            "CONN_MAX_AGE": envint("OTTO_CONN_MAX_AGE", 0),
            "TEST": {"NAME": str(DATA_DIR / "test.sqlite3")},
        }
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Django's four: "password", "12345678" or one's own username are refused; and ours: a password of
# fewer than five different characters ("aaaaaaaaaaaa").
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    {"NAME": "accounts.passwords.VarietyValidator"},
]
# Failed sign-ins (accounts/throttle.py): a client address is locked for one account after this many
# failed logins at it, and for every account after this many failed logins (at any accounts) or bearer
# tokens; no account is locked for everyone. The first lock-out lasts OTTO_AUTH_LOCKOUT_SECONDS and
# each failure after it doubles it, up to OTTO_AUTH_LOCKOUT_MAX_SECONDS.
OTTO_AUTH_FAILURES = envint("OTTO_AUTH_FAILURES", 5)
OTTO_AUTH_ADDRESS_FAILURES = envint("OTTO_AUTH_ADDRESS_FAILURES", 20)
OTTO_AUTH_LOCKOUT_SECONDS = envint("OTTO_AUTH_LOCKOUT_SECONDS", 60)
OTTO_AUTH_LOCKOUT_MAX_SECONDS = envint("OTTO_AUTH_LOCKOUT_MAX_SECONDS", 3600)
# Behind a proxy every request comes from the proxy: name the header it puts the client's address in
# (e.g. X-Forwarded-For; its last address is used). Empty: the connection's address.
OTTO_CLIENT_ADDRESS_HEADER = envstr("OTTO_CLIENT_ADDRESS_HEADER", "")
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "static"
# The embedded server serves its own static files; behind a proxy, set OTTO_SERVE_STATIC=0.
SERVE_STATIC = envbool("OTTO_SERVE_STATIC", True)

# Web server processes `make run` (uvicorn, ottoweb/asgi.py) starts, and the threads each runs Django
# on (the dashboard's polling, API calls and MCP tools' own pool of 40 all at once).
OTTO_WEB_WORKERS = envint("OTTO_WEB_WORKERS", 1)
OTTO_WEB_THREADS = envint("OTTO_WEB_THREADS", 16)

# Request bodies (a batch, a /runs/fit transcript). Larger bodies answer 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = envint("OTTO_MAX_BODY_BYTES", 32 * 1024 * 1024)
# A batch is one transaction, and on SQLite every other writer waits for it: these bound it. 1,000
# items is the API contract's batch (docs/api.md); the bytes bound what those items may weigh.
# Beyond either, 413 naming the limit.
OTTO_MAX_BATCH_ITEMS = envint("OTTO_MAX_BATCH_ITEMS", 1000)
OTTO_MAX_BATCH_BYTES = envint("OTTO_MAX_BATCH_BYTES", 2 * 1024 * 1024)
# Messages in one /runs/fit transcript (its bytes are bounded by OTTO_MAX_BODY_BYTES); beyond, 413.
OTTO_MAX_FIT_MESSAGES = envint("OTTO_MAX_FIT_MESSAGES", 10_000)
# Arrays and objects in a request body (API, dashboard import) may nest this deep; deeper is a 422.
OTTO_MAX_JSON_DEPTH = envint("OTTO_MAX_JSON_DEPTH", 64)
# A session document, both ways: an export larger than this is refused (it could not be imported
# back), an import larger answers 422 before it is read. Import reads its body as a stream, so
# this may exceed OTTO_MAX_BODY_BYTES.
OTTO_MAX_IMPORT_BYTES = envint("OTTO_MAX_IMPORT_BYTES", 64 * 1024 * 1024)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": envstr("OTTO_LOG_LEVEL", "INFO")},
}

# --- memory ---------------------------------------------------------------------------------------
OTTO_X_BUDGET = envint("OTTO_X_BUDGET", 24_000)
OTTO_Y_BUDGET = envint("OTTO_Y_BUDGET", 80_000)
# The share of Y a person's verbatim turns may fill; past it chatter leaves the prompt view before
# instructions (kept verbatim in the store, cited by a quote bullet). Between 0.05 and 1 (issue 15).
OTTO_PROTECTED_SHARE = min(1.0, max(0.05, envfloat("OTTO_PROTECTED_SHARE", 0.5)))
# Pinned turns a session may hold (their tokens are also bounded by its protected share of Y);
# a pin beyond either answers 409 too_many_pins.
OTTO_MAX_PINS = envint("OTTO_MAX_PINS", 32)
# One item's text, in characters: longer answers 422 (≈250K tokens, past any model's window).
OTTO_MAX_ITEM_CHARS = envint("OTTO_MAX_ITEM_CHARS", 1_000_000)
OTTO_SUMMARIZER = envstr("OTTO_SUMMARIZER", "offline")
# Recorded in the database on first use; see memory/services/embedding.py and docs/recall.md, "Embeddings".
OTTO_EMBEDDING_MODEL = envstr("OTTO_EMBEDDING_MODEL", "minilm")
# "inline" compacts inside the append that overflowed Y; "job" hands it to the Celery worker.
OTTO_COMPACTION = envstr("OTTO_COMPACTION", "job")
# Recall ranks a recently searched session's vectors from a matrix held in the process (memory/storage/
# caches.py VectorCache), up to this many MB of them; a session that does not fit is searched in sqlite-vec.
OTTO_VECTOR_CACHE_MB = envint("OTTO_VECTOR_CACHE_MB", 96)
# Folders a re-embedding's `fastembed:<model>@<folder>` may name (comma-separated); any other is refused.
OTTO_MODEL_DIRS = [
    d
    for d in envstr("OTTO_MODEL_DIRS", str(DATA_DIR / "models") + "," + str(DATA_DIR / "fastembed")).split(
        ","
    )
    if d
]
# Recall rules switched off (comma-separated names of memory/engine/ranking.py's `Rules`: feedback,
# expansion, first_person, subject, speaker_boost, time_boost, asker,
# instructions, decisions, updates); a request may switch off more.
OTTO_RECALL_RULES_OFF = [r.strip() for r in envstr("OTTO_RECALL_RULES_OFF", "").split(",") if r.strip()]
# Keyword recall's last resort, a substring scan, only for queries up to this many characters.
OTTO_SUBSTRING_MAX_CHARS = envint("OTTO_SUBSTRING_MAX_CHARS", 200)
# ... and reading at most this many characters of text, newest turns first.
OTTO_SUBSTRING_SCAN_CHARS = envint("OTTO_SUBSTRING_SCAN_CHARS", 8_000_000)
# A lessons search or related-errors lookup reads and scores at most this many of the newest records.
OTTO_LESSONS_SEARCH_LIMIT = envint("OTTO_LESSONS_SEARCH_LIMIT", 2000)
# A manual compact (`memory` action "compact") of more raw tokens than this (X + Y) is handed to the
# worker in job mode; the answer names the job. Smaller ones run in the request.
OTTO_INLINE_COMPACT_TOKENS = envint("OTTO_INLINE_COMPACT_TOKENS", 50_000)
# Jobs one user may have waiting for the worker; a re-embedding request beyond it answers 429.
OTTO_MAX_QUEUED_JOBS = envint("OTTO_MAX_QUEUED_JOBS", 20)
# The worker embeds every turn still without a vector this often (0: never), whatever left it
# behind: a lost task, a restart, a database error that outlasted every retry.
OTTO_EMBED_SWEEP_SECONDS = envint("OTTO_EMBED_SWEEP_SECONDS", 300)
OTTO_MODEL_WINDOWS_URL = envstr("OTTO_MODEL_WINDOWS_URL", "")  # in-run compaction's window table
# The engine's own settings (memory/engine/config.py, handed over by memory/apps.py): where the packaged
# embedding model's files are gathered, or a folder that holds them; onnxruntime threads per embedding
# call (0: every core; wsgi.py and asgi.py make it 1 in the web process); the model hub offline or not.
OTTO_MODEL_CACHE = Path(os.environ["OTTO_MODEL_CACHE"])
OTTO_MINILM_DIR = envstr("OTTO_MINILM_DIR", "")
OTTO_EMBED_THREADS = envint("OTTO_EMBED_THREADS", 0)
OTTO_HUB_OFFLINE = os.environ["HF_HUB_OFFLINE"] == "1"

# --- celery ---------------------------------------------------------------------------------------
_BROKER_DIR = DATA_DIR / "broker"
CELERY_BROKER_URL = envstr("CELERY_BROKER_URL", "filesystem://")
if CELERY_BROKER_URL == "filesystem://":
    for sub in ("out", "processed", "control"):
        (_BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_BROKER_DIR / "out"),
        "data_folder_out": str(_BROKER_DIR / "out"),
        "processed_folder": str(_BROKER_DIR / "processed"),
        # Without this kombu writes its control exchange into the current directory.
        "control_folder": str(_BROKER_DIR / "control"),
        "store_processed": False,
    }
# One queue per deployment: two instances sharing a Redis never take each other's jobs.
CELERY_TASK_DEFAULT_QUEUE = envstr("OTTO_CELERY_QUEUE", "ottoweb")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_BACKEND = None
# Celery beat (`celery -A ottoweb beat`): expired error records are deleted once a day.
CELERY_BEAT_SCHEDULE = {
    "lessons-purge-expired": {"task": "lessons.purge_expired", "schedule": 24 * 60 * 60.0},
}

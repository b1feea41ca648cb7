"""Settings read from the environment, with defaults that work on a developer machine.

Local defaults: PostgreSQL and Redis on 127.0.0.1. The README's run command sets
DATABASE_URL=sqlite:///..., REDIS_URL= (empty) and CELERY_BROKER_URL=filesystem:// when those
services cannot be reached (the embedded mode).
"""

import logging
from pathlib import Path
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from project.databases import database_config, pool_from_env, replica_config, web_timeouts
from project.env import (
    env_bool,
    env_float,
    env_hostports,
    env_int,
    env_list,
    env_log_level,
    env_mapping,
    env_number,
    env_port,
    env_str,
    env_url,
    redis_database,
    sentinel_broker_url,
    sentinel_location,
)
from project.log_config import logging_config

# The trainings' push backend (TRAININGS_PUSH_*): docs/push.md.
from project.push_settings import *  # noqa: F403

# Client identity (NUM_PROXIES) and failed sign-ins (django-axes): docs/operations.md, Security.
from project.sign_in import *  # noqa: F403
from project.sign_in import NUM_PROXIES

BASE_DIR = Path(__file__).resolve().parent.parent
RUN_DIR = Path(env_str("RUN_DIR", "") or BASE_DIR / ".run")

DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_str("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "insecure-local-development-key-only"
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# --- HTTPS and browser hardening: on by default when DEBUG is off -------------------------
# Behind a TLS-terminating proxy set SECURE_PROXY_SSL_HEADER=X-Forwarded-Proto (the header
# the proxy sets to "https"); /healthz stays on plain HTTP for load balancers.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
_proxy_header = env_str("SECURE_PROXY_SSL_HEADER", "")
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_" + _proxy_header.upper().replace("-", "_"), "https") if _proxy_header else None
)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
# On with DEBUG off, as `check --deploy` asks; a domain that must keep plain-HTTP subdomains
# sets SECURE_HSTS_PRELOAD=0 (leaving a browser preload list takes months).
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = env_str("SECURE_REFERRER_POLICY", "same-origin")
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "project",  # before staticfiles: its runserver (LOG_FORMAT=json) wraps staticfiles' own
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and ReDoc from our own static files
    "admincharts",  # Chart.js in its static files, for the operators' dashboard
    "axes",  # failed sign-ins: lockouts, listed (and lifted) in the admin
    "scheduling",
    "scheduling.recurring",
    "scheduling.jobs",
    "purchases",
    "trainings",
]

MIDDLEWARE = [
    "project.request_timeouts.DatabaseTimeouts",  # first: a request's every statement has them
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # a locked-out admin sign-in: 429 with the reason
    "scheduling.views.InputRefusals",  # "\uff11" is no row id; over-limit API bodies: JSON
    "scheduling.views.BusyDatabaseMiddleware",  # a busy database: 503 with Retry-After
]

ROOT_URLCONF = "project.urls"
WSGI_APPLICATION = "project.wsgi.application"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

# --- Database -----------------------------------------------------------------------------
# SCHEDULING_EMBEDDED=1: what `.ci/up` runs when PostgreSQL or Redis are away, for manage.py
# too: SQLite in RUN_DIR (unless DATABASE_URL says otherwise), no Redis, a filesystem broker.
EMBEDDED = env_bool("SCHEDULING_EMBEDDED", False)
DATABASE_URL = env_url(
    "DATABASE_URL",
    f"sqlite:///{RUN_DIR / 'embedded.sqlite3'}"
    if EMBEDDED
    else "postgres://postgres@127.0.0.1:5432/scheduling",
    schemes=("postgres", "postgresql", "sqlite"),
)
# Several hosts (libpq's multi-host form, project/databases.py) for a replicated PostgreSQL:
# a new connection finds whichever is the primary. The health check makes a kept connection
# that a failover broke reconnect before a request uses it, instead of failing that request.
DATABASES = {
    "default": database_config(
        "DATABASE_URL", DATABASE_URL, conn_max_age=60, conn_health_checks=True
    )
}
if DATABASES["default"]["ENGINE"].endswith("postgresql"):
    # Per host tried: a host that is down but does not refuse costs this many seconds.
    options = DATABASES["default"].setdefault("OPTIONS", {})
    options.setdefault("connect_timeout", env_int("DATABASE_CONNECT_TIMEOUT", 5))
else:
    # Embedded mode: IMMEDIATE transactions take SQLite's write lock at BEGIN, so two sweeps
    # serialise instead of both reading the same due rows.
    DATABASES["default"]["OPTIONS"] = {"transaction_mode": "IMMEDIATE", "timeout": 20}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Read replicas (docs/read-replicas.md): only when DATABASE_REPLICA_URL is set ------------
if env_str("DATABASE_REPLICA_URL", ""):
    DATABASE_REPLICA_URL = env_url("DATABASE_REPLICA_URL", "", schemes=("postgres", "postgresql"))
    DATABASES["replica"] = replica_config(
        "DATABASE_REPLICA_URL", DATABASE_REPLICA_URL, env_int("DATABASE_CONNECT_TIMEOUT", 5)
    )
    SCHEDULING_READ_REPLICAS = {"default": ["replica"]}
    # First: it sees every read before a router that puts a domain on another database.
    DATABASE_ROUTERS = ["scheduling.ReplicaRouter", *globals().get("DATABASE_ROUTERS", [])]
    MIDDLEWARE = [*MIDDLEWARE, "scheduling.ReplicaReadsMiddleware"]
pool_from_env(DATABASES)  # DATABASE_POOL_MAX_SIZE: a ceiling of connections, per database
# Seconds a web request may wait for a lock, and run a statement (project/request_timeouts.py).
DATABASE_LOCK_TIMEOUT, DATABASE_STATEMENT_TIMEOUT = web_timeouts()

# --- Redis: cache and the sweep lock --------------------------------------------------------
REDIS_URL = "" if EMBEDDED else env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
# Redis behind Sentinel (docs/high-availability.md): the Sentinels name the current master of
# REDIS_SENTINEL_MASTER; REDIS_URL then gives only the database and the password.
REDIS_SENTINELS = env_hostports("REDIS_SENTINELS") if REDIS_URL else []
REDIS_SENTINEL_MASTER = env_str("REDIS_SENTINEL_MASTER", "mymaster")
REDIS_SENTINEL_PASSWORD = env_str("REDIS_SENTINEL_PASSWORD", "")  # the Sentinels' own, if any
_SENTINEL_KWARGS: dict[str, object] = {"socket_timeout": 2.0, "socket_connect_timeout": 2.0}
if REDIS_SENTINEL_PASSWORD:
    _SENTINEL_KWARGS["password"] = REDIS_SENTINEL_PASSWORD
if REDIS_URL:
    REDIS_URL = env_url(
        "REDIS_URL",
        REDIS_URL,
        schemes=("redis",) if REDIS_SENTINELS else ("redis", "rediss", "unix"),
    )
    _redis_options: dict[str, object] = {"SOCKET_CONNECT_TIMEOUT": 2, "SOCKET_TIMEOUT": 2}
    if REDIS_SENTINELS:
        _redis_options |= {
            "CLIENT_CLASS": "django_redis.client.SentinelClient",
            "CONNECTION_FACTORY": "django_redis.pool.SentinelConnectionFactory",
            "SENTINELS": REDIS_SENTINELS,
            "SENTINEL_KWARGS": _SENTINEL_KWARGS,
        }
    CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            # Behind Sentinel one URL, the master's (no replica pool): the purge's resume point
            # and DRF's throttle read what they have just written.
            "LOCATION": [sentinel_location(REDIS_URL, REDIS_SENTINEL_MASTER)]
            if REDIS_SENTINELS
            else REDIS_URL,
            "OPTIONS": _redis_options,
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Celery -------------------------------------------------------------------------------
SCHEDULING_PUBLISH_TIMEOUT = env_number("SCHEDULING_PUBLISH_TIMEOUT", 5.0)

CELERY_BROKER_URL = env_url(
    "CELERY_BROKER_URL",
    # By default the next database of the same Redis: queue names (some chosen by API clients)
    # then never meet the cache's or the sweep locks' keys. Behind Sentinel, through them.
    sentinel_broker_url(REDIS_URL, REDIS_SENTINELS, +1)
    if REDIS_SENTINELS
    else redis_database(REDIS_URL, +1)
    if REDIS_URL
    else "filesystem://",
    schemes=(
        *("redis", "rediss", "unix", "sentinel", "amqp", "amqps", "pyamqp"),
        *("filesystem", "memory"),
    ),
)
if EMBEDDED:
    CELERY_BROKER_URL = "filesystem://"
CELERY_BROKER_CONNECTION_TIMEOUT = SCHEDULING_PUBLISH_TIMEOUT
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {
    # A publish to a broker that went away must fail within a bounded time, never hang.
    "socket_timeout": SCHEDULING_PUBLISH_TIMEOUT,
    "socket_connect_timeout": SCHEDULING_PUBLISH_TIMEOUT,
    "confirm_publish": True,
}
if CELERY_BROKER_URL.startswith("sentinel://"):
    # kombu's Sentinel transport: the master of this name, asked of the URL's Sentinels.
    CELERY_BROKER_TRANSPORT_OPTIONS |= {
        "master_name": REDIS_SENTINEL_MASTER,
        "sentinel_kwargs": _SENTINEL_KWARGS,
    }
# RabbitMQ quorum queues (replicated, for durable delivery): Celery declares every queue it
# creates (the sweep queue, each model's, its default one) with x-queue-type=quorum, and the
# plain-JSON queues of keyed jobs and schedules are declared so too. Publisher confirms stay on.
_QUORUM_QUEUES = env_bool("CELERY_BROKER_QUORUM_QUEUES", False)
if _QUORUM_QUEUES and urlsplit(CELERY_BROKER_URL).scheme not in ("amqp", "amqps", "pyamqp"):
    raise ImproperlyConfigured(
        "CELERY_BROKER_QUORUM_QUEUES=1 is not valid with this broker: quorum queues are "
        "RabbitMQ's (CELERY_BROKER_URL=amqp://...)."
    )
if _QUORUM_QUEUES:
    CELERY_TASK_DEFAULT_QUEUE_TYPE = "quorum"
    CELERY_TASK_CREATE_MISSING_QUEUE_TYPE = "quorum"
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = RUN_DIR / "broker"
    for _folder in ("out", "processed", "control"):
        (_broker_dir / _folder).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "out"),
        "data_folder_out": str(_broker_dir / "out"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 4
CELERY_TASK_ROUTES = {"scheduling.*": {"queue": "scheduling"}}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# --- Scheduling framework -----------------------------------------------------------------
# Numbers where the text reads as one, else the text: the framework judges every SCHEDULING_*
# value (scheduling.E001 in `manage.py check`, and again as a worker, beat or sweep starts).
SCHEDULING_SWEEP_INTERVAL = env_number("SCHEDULING_SWEEP_INTERVAL", 1.0)
SCHEDULING_BATCH_SIZE = env_number("SCHEDULING_BATCH_SIZE", 1000)
SCHEDULING_TIME_BUDGET = env_number("SCHEDULING_TIME_BUDGET", 10.0)
SCHEDULING_LOCK_TTL = env_number("SCHEDULING_LOCK_TTL", 30.0)
SCHEDULING_MAX_ATTEMPTS = env_number("SCHEDULING_MAX_ATTEMPTS", 10)
# After publishing: a failed handling is tried again after RETRY_BACKOFF seconds, doubling up to
# RETRY_BACKOFF_MAX; an event not handled within HANDLING_TIMEOUT seconds is published again.
SCHEDULING_RETRY_BACKOFF = env_number("SCHEDULING_RETRY_BACKOFF", 5.0)
SCHEDULING_RETRY_BACKOFF_MAX = env_number("SCHEDULING_RETRY_BACKOFF_MAX", 600.0)
SCHEDULING_HANDLING_TIMEOUT = env_number("SCHEDULING_HANDLING_TIMEOUT", 600.0)
# Retention (manage.py scheduling_purge, hourly from beat), in days since the row became done.
SCHEDULING_KEEP_DONE_DAYS = env_number("SCHEDULING_KEEP_DONE_DAYS", 7)
SCHEDULING_KEEP_FAILED_DAYS = env_number("SCHEDULING_KEEP_FAILED_DAYS", 30)
# Operations: /metrics answers `Authorization: Bearer <token>` (empty: staff sessions only);
# /healthz answers 503 when a model's oldest due row has waited longer than this many seconds.
SCHEDULING_METRICS_TOKEN = env_str("SCHEDULING_METRICS_TOKEN", "")
SCHEDULING_HEALTH_MAX_LATENESS = env_number("SCHEDULING_HEALTH_MAX_LATENESS", 60.0)
SCHEDULING_SWEEPER_SLOTS = env_number("SCHEDULING_SWEEPER_SLOTS", 1)
SCHEDULING_QUEUE_TARGET_MAX_BACKLOG = env_number("SCHEDULING_QUEUE_TARGET_MAX_BACKLOG", 10_000)
# Sub-second lateness: a beat-driven sweep stays on this long (< the interval), napping at most
# HOLD_NAP between looks; each needs a process of a `-Q scheduling` worker (models x slots).
SCHEDULING_SWEEP_HOLD = env_number("SCHEDULING_SWEEP_HOLD", 0.0)
SCHEDULING_SWEEP_HOLD_NAP = env_number("SCHEDULING_SWEEP_HOLD_NAP", 0.2)
# Publishing pace per model, across every sweeper: "app_label.ModelName=N/s" or "=N/m", comma-
# separated (e.g. purchases.ScheduledPurchase=500/s); over each model's own `rate_limit`.
SCHEDULING_RATE_LIMITS = env_mapping("SCHEDULING_RATE_LIMITS", {})
# Keyed jobs (PUT /api/jobs/{key}/): instants per job, and bytes of JSON payload per job.
SCHEDULING_JOB_MAX_INSTANTS = env_number("SCHEDULING_JOB_MAX_INSTANTS", 1000)
SCHEDULING_JOB_MAX_PAYLOAD_BYTES = env_number("SCHEDULING_JOB_MAX_PAYLOAD_BYTES", 65536)
# Task names or patterns ("billing.*,reports.build") other codebases' workers run for keyed jobs.
SCHEDULING_EXTERNAL_TASKS = env_list("SCHEDULING_EXTERNAL_TASKS", [])
# Django's task framework on keyed jobs (docs/django-tasks.md): purchases' refund confirmations.
TASKS: dict[str, dict[str, object]] = {
    "default": {"BACKEND": "scheduling.jobs.backends.SchedulingBackend"}
}
# What the app's ready() adds to the project; each can be turned off (docs/adding-scheduling.md).
SCHEDULING_ADMIN_AUTOREGISTER = env_bool("SCHEDULING_ADMIN_AUTOREGISTER", True)
SCHEDULING_ADMIN_PAGES = env_bool("SCHEDULING_ADMIN_PAGES", True)
SCHEDULING_ADMIN_INDEX_TEMPLATE = env_bool("SCHEDULING_ADMIN_INDEX_TEMPLATE", True)
SCHEDULING_QUIET_IDLE_SWEEPS = env_bool("SCHEDULING_QUIET_IDLE_SWEEPS", True)
SCHEDULING_WORKER_KEEPS_CONNECTIONS = env_bool("SCHEDULING_WORKER_KEEPS_CONNECTIONS", True)
# Recurring schedules: the seconds a fire time may be late before it counts as missed
# (misfire policies apply; a fire_all catch-up is bounded by each schedule's catchup_window).
SCHEDULING_RECURRING_MISFIRE_GRACE = env_number("SCHEDULING_RECURRING_MISFIRE_GRACE", 10.0)

# --- Domains ------------------------------------------------------------------------------
# Absolute links in emails (download links) start with this: the site's public URL. By
# default the local web server of `.ci/up`, on PORT.
PURCHASES_SITE_URL = env_url(
    "PURCHASES_SITE_URL",
    f"http://localhost:{env_port('PORT', 8000)}",
    schemes=("http", "https"),
)

# --- Email --------------------------------------------------------------------------------
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_FILE_PATH = env_str("EMAIL_FILE_PATH", str(RUN_DIR / "mail"))
# The SMTP backend's server (django.core.mail.backends.smtp.EmailBackend; the bench's fake).
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_port("EMAIL_PORT", 25)
EMAIL_TIMEOUT = env_float("EMAIL_TIMEOUT", 30.0, maximum=3600)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "no-reply@localhost")

# --- REST ---------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.DjangoModelPermissions"],
    "DEFAULT_PARSER_CLASSES": [
        "scheduling.api.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "scheduling.api.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "NUM_PROXIES": NUM_PROXIES,
    # A busy database (a lock or statement timeout, no pooled connection free): 503, Retry-After.
    "EXCEPTION_HANDLER": "scheduling.api.api_exception_handler",
}
# Bulk reschedule and cancel requests per user (every bulk endpoint shares the budget).
SCHEDULING_BULK_THROTTLE_RATE = env_str("SCHEDULING_BULK_THROTTLE_RATE", "60/min")
# Writes per user: creating, editing, deleting and triggering recurring schedules; keyed jobs.
SCHEDULING_SCHEDULE_WRITE_THROTTLE_RATE = env_str(
    "SCHEDULING_SCHEDULE_WRITE_THROTTLE_RATE", "60/min"
)
SCHEDULING_JOB_WRITE_THROTTLE_RATE = env_str("SCHEDULING_JOB_WRITE_THROTTLE_RATE", "600/min")
SPECTACULAR_SETTINGS = {
    "TITLE": "Scheduling API",
    "DESCRIPTION": "Per-domain scheduled rows: list, reschedule and cancel by business facts.",
    "VERSION": "0.2.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and its docs page list every endpoint and filter: for signed-in users only.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Every scheduled model shares ScheduledEvent.Status: one enum in the schema, not a clash.
    # The trainings' kind is in both its own resource and the generic one: one enum too.
    "ENUM_NAME_OVERRIDES": {
        "ScheduledEventStatusEnum": "scheduling.Status",
        "NotificationKindEnum": "trainings.kinds.NotificationKind",
    },
    # Swagger UI and ReDoc from drf_spectacular_sidecar's static files, never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Misc ---------------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = RUN_DIR / "static"
# LOG_FORMAT=json: one JSON object per line (project/logging.py), with the records' extra fields.
LOG_FORMAT = env_str("LOG_FORMAT", "text").strip().lower()
if LOG_FORMAT not in ("text", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT={LOG_FORMAT!r} is not valid: expected text or json.")
LOGGING = logging_config(LOG_FORMAT, env_log_level("LOG_LEVEL", "INFO"))
if LOG_FORMAT == "json":
    logging.captureWarnings(True)  # a Python warning is a log line too, not bare text
# Error reports (AdminEmailHandler) also hide passwords in URL settings and sensitive POST fields.
DEFAULT_EXCEPTION_REPORTER_FILTER = "project.redaction.ReporterFilter"

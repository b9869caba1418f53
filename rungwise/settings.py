"""Rungwise settings.

Every value that differs between machines is read from the environment here and nowhere else.
Unset variables give the *embedded default*: a SQLite file with IMMEDIATE transactions and Celery
tasks run in-process, so `make run` works on a bare machine. Setting DATABASE_URL (PostgreSQL) and
CELERY_BROKER_URL (Redis) switches to the real services with no code change.
"""

import ipaddress
import os
from pathlib import Path

import dj_database_url
from celery.schedules import crontab  # noqa: F401  (documented alternative for beat entries)
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if not value:
        return default
    return [part.strip() for part in value.split(",") if part.strip()]


DEBUG = env_bool("DEBUG", default=False)
_DEV_SECRET = "rungwise-embedded-default-not-secret"
SECRET_KEY = os.environ.get("SECRET_KEY") or _DEV_SECRET
# .env.example's placeholder ("change-me-…") is as public as the built-in key: refused anywhere.
if SECRET_KEY.strip().lower().startswith("change-me"):
    raise ImproperlyConfigured(
        "SECRET_KEY is still the placeholder of .env.example: set SECRET_KEY to a long random "
        "string (python -c 'import secrets; print(secrets.token_urlsafe(50))')."
    )
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
# Where the site is really exposed: the address its port is published on (docker-compose.yml's
# `ports`) or a native server listens on. ALLOWED_HOSTS alone cannot tell: a server listening on
# every interface answers anyone on the network who sends `Host: localhost`.
BIND_ADDRESS = os.environ.get("RUNGWISE_BIND", "").strip() or "127.0.0.1"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 bracketed or not) is this machine only."""
    host = host.strip().strip("[]").lower()
    if host in {"localhost", "testserver"}:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# The embedded default (public development key, plain HTTP) serves this machine only. As soon as
# other machines can reach the site (bound beyond loopback, or ALLOWED_HOSTS naming another host)
# it needs its own SECRET_KEY and gets HTTPS hardening unless DEBUG is on.
SERVES_BEYOND_LOOPBACK = not is_loopback(BIND_ADDRESS) or not all(
    is_loopback(host) for host in ALLOWED_HOSTS
)
if SECRET_KEY == _DEV_SECRET and SERVES_BEYOND_LOOPBACK:
    raise ImproperlyConfigured(
        "SECRET_KEY is not set, but other machines can reach this site (RUNGWISE_BIND "
        f"{BIND_ADDRESS}, ALLOWED_HOSTS {', '.join(ALLOWED_HOSTS)}): set SECRET_KEY to a long "
        "random string (the built-in key is public and serves only 127.0.0.1 / localhost)."
    )

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "template_partials",
    "django_htmx",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "annotation",
    "agreement",
    "imports",
    "releases",
    "api",
    "ratings",
    "review.meter",
    "review.causalt5k",
    "graphs",
    "narratives",
    "studio",
    "crowd",
    "llm",
    "quality",
    "sso",
    "webhooks",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "rungwise.middleware.CSPMiddleware",
    # Archived projects are read-only: marks the requests that ask to change something.
    "annotation.middleware.ArchivedProjectsReadOnly",
    # Last, as django-axes asks: turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

# The annotator loop's plain token requests — POST to these paths with `Authorization: Token`
# and no Cookie header at all — pass through MIDDLEWARE without the entries below
# (rungwise/handlers.py; benchmarks/levers.py, lever `chain`). Each has nothing to do there:
LEAN_REQUEST_PATH = r"/api/(stages/[0-9]+/next|assignments/[0-9]+/submit)/"
LEAN_MIDDLEWARE_SKIPPED = [
    # static files only, under STATIC_URL; these are API paths
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # no cookie to check or renew; the API's views are csrf_exempt (DRF checks CSRF itself, for
    # session-authenticated requests only, and without a cookie there is no session)
    "django.middleware.csrf.CsrfViewMiddleware",
    # the API stores no messages (the middleware reads and writes only the messages' cookie)
    "django.contrib.messages.middleware.MessageMiddleware",
    # request.htmx is read by pages only
    "django_htmx.middleware.HtmxMiddleware",
    # it answers a password sign-in locked out by django-axes; these requests sign in by token
    "axes.middleware.AxesMiddleware",
]

# --- Sign-in: lockout after repeated failures (django-axes) ------------------------------------
AUTHENTICATION_BACKENDS = [
    "rungwise.auth.LockoutBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Failures are counted per (account, address): guessing one account's password from one address
# stops after AXES_FAILURE_LIMIT tries for AXES_COOLOFF_TIME hours, without letting anyone lock
# a colleague out from elsewhere. And per address over every account (password spraying: one
# password tried on many accounts): LOGIN_ADDRESS_FAILURE_LIMIT failures lock that address out
# (rungwise.auth.LockoutHandler; 0 turns it off). The login page, /admin/login/ and the API
# token endpoint count.
AXES_FAILURE_LIMIT = int(os.environ.get("RUNGWISE_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = float(os.environ.get("RUNGWISE_LOGIN_COOLOFF_HOURS", "0.25"))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_HANDLER = "rungwise.auth.LockoutHandler"
LOGIN_ADDRESS_FAILURE_LIMIT = int(os.environ.get("RUNGWISE_LOGIN_ADDRESS_FAILURE_LIMIT", "30"))
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "locked_out.html"
# How many reverse proxies in front of the site append to X-Forwarded-For (0: none; the client
# address is REMOTE_ADDR and the header is ignored, so rotating it bypasses nothing). Read by
# the login lockout and by the API throttles alike.
TRUSTED_PROXIES = int(os.environ.get("RUNGWISE_TRUSTED_PROXIES", "0"))
AXES_IPWARE_PROXY_COUNT = TRUSTED_PROXIES or None
AXES_IPWARE_META_PRECEDENCE_ORDER = (
    ["HTTP_X_FORWARDED_FOR", "REMOTE_ADDR"] if TRUSTED_PROXIES else ["REMOTE_ADDR"]
)

# --- Content Security Policy (django-csp): scripts and everything else from this site only;
# inline style attributes are allowed (templates use a few), inline scripts are not.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
        "base-uri": ["'self'"],
        "object-src": ["'none'"],
    }
}

if env_bool("RUNGWISE_QUERY_COUNT_HEADER", default=False):
    MIDDLEWARE.insert(0, "rungwise.middleware.QueryCountHeaderMiddleware")

ROOT_URLCONF = "rungwise.urls"
WSGI_APPLICATION = "rungwise.wsgi.application"

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
                "annotation.navigation.navigation",
            ],
        },
    }
]

# --- Database -------------------------------------------------------------------------------
DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    # Connections are kept between requests (conn_max_age) and checked before a request reuses
    # one (conn_health_checks): after PostgreSQL restarts, a kept connection is dead, and
    # without the check the first request on each one failed (tests/test_deployment.py).
    DATABASES = {
        "default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)
    }
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Parameters bound on the server, and psycopg prepares a statement on a connection once
        # it has run there 5 times (prepare_threshold; Django turns preparing off unless it is
        # set): PostgreSQL then stops parsing and planning the annotator loop's statements on
        # every request. Measured: its CPU per next + submit 3.8 ms → 1.7 ms
        # (benchmarks/README.md). Not for a pooler in transaction mode (none is deployed).
        options = DATABASES["default"].setdefault("OPTIONS", {})
        options["server_side_binding"] = True
        options.setdefault("prepare_threshold", 5)
        # Django's backend with batches that fit server-side binding's 65,535 parameters.
        DATABASES["default"]["ENGINE"] = "rungwise.db.postgresql"
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("SQLITE_PATH", str(BASE_DIR / "db.sqlite3")),
            # IMMEDIATE takes the write lock when a transaction starts, so two annotators asking
            # for the next item serialise instead of failing with "database is locked" on upgrade.
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
IS_POSTGRES = DATABASES["default"]["ENGINE"].endswith("postgresql")

# --- Embedded default: SQLite's journal (benchmarks/embedded_submit.py) ----------------------
# WAL: readers (a page, the in-process task thread) no longer block the writer nor it them, and
# with synchronous=NORMAL a commit appends to the log without waiting for the disk (the log is
# synced at checkpoints). A crash of the process loses nothing; a power cut may lose the last
# commits but never corrupts the file. Profiled over 20 choice submits on this shared disk (load
# 10–11): time inside SQLite 178 → 95 ms per submit (benchmarks/README.md, "Embedded default").
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "init_command", "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL"
    )

# --- Embedded default: a request thread keeps its SQLite connection --------------------------
# runserver serves a browser's keep-alive connection on one thread; closing the database
# connection after each request made every request open a new one (SQLite re-reads the schema:
# ~2 ms of CPU) and, when it was the file's last connection, close it with a checkpoint that
# waits for the disk. Kept, it lives as long as the thread (runserver closes it with the
# socket). Measured in the request thread (benchmarks/README.md, "Embedded default").
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["CONN_MAX_AGE"] = None

# --- Connection pooling (PgBouncer; docs/deployment.md, "Connection pooling") ---------------
# RUNGWISE_DB_POOL_MODE says what DATABASE_URL points at. "session" (the default): PostgreSQL
# itself, or PgBouncer in session mode, where a client keeps one server connection and
# everything above holds. "transaction": PgBouncer in transaction mode, where consecutive
# transactions of one client may run on different server connections, so nothing may outlive
# a transaction on the server: no named prepared statements (psycopg prepares none with
# prepare_threshold None; PgBouncer before 1.21 cannot track them) and no server-side cursors
# (QuerySet.iterator() declares one). RUNGWISE_DB_CONN_MAX_AGE: seconds a web or worker process
# keeps its connection (to the pooler or the server; 0 closes it after each request).
DATABASE_POOL_MODE = os.environ.get("RUNGWISE_DB_POOL_MODE", "").strip().lower() or "session"
if DATABASE_POOL_MODE not in {"session", "transaction"}:
    raise ImproperlyConfigured(
        f"RUNGWISE_DB_POOL_MODE must be session or transaction, not {DATABASE_POOL_MODE!r}."
    )
if DATABASE_URL and os.environ.get("RUNGWISE_DB_CONN_MAX_AGE", "").strip():
    DATABASES["default"]["CONN_MAX_AGE"] = int(os.environ["RUNGWISE_DB_CONN_MAX_AGE"])
if IS_POSTGRES and DATABASE_POOL_MODE == "transaction":
    DATABASES["default"]["OPTIONS"]["prepare_threshold"] = None
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True

# --- Read replica (docs/deployment.md, "Reads off the primary"; rungwise/replica.py) ---------
# RUNGWISE_REPLICA_URL: a PostgreSQL streaming replica of DATABASE_URL's database. Views marked
# with rungwise.replica.reads_from_replica (researchers' dashboards, the data manager) read there
# while it trails the primary by at most RUNGWISE_REPLICA_MAX_LAG seconds, else the primary;
# writes never go there (rungwise/dbrouter.py). Unset: one database, no router.
REPLICA_URL = os.environ.get("RUNGWISE_REPLICA_URL", "").strip()
REPLICA_MAX_LAG = float(os.environ.get("RUNGWISE_REPLICA_MAX_LAG", "").strip() or 30)
#: How long a process trusts its last look at the replica's lag; after the replica failed to
#: answer, how long it reads the primary before asking again.
REPLICA_LAG_CACHE_SECONDS = 1.0
REPLICA_RETRY_SECONDS = 5.0
if REPLICA_URL:
    if not IS_POSTGRES:
        raise ImproperlyConfigured("RUNGWISE_REPLICA_URL needs DATABASE_URL to name PostgreSQL.")
    _replica = dj_database_url.parse(
        REPLICA_URL,
        conn_max_age=DATABASES["default"]["CONN_MAX_AGE"],
        conn_health_checks=True,
    )
    _replica["ENGINE"] = DATABASES["default"]["ENGINE"]
    # The primary's connection options (server-side binding, prepared statements as the pool
    # mode allows), and a short connect timeout: a replica host that is down costs a page at
    # most that long, once every REPLICA_RETRY_SECONDS, before the primary serves it.
    _replica["OPTIONS"] = {
        **DATABASES["default"]["OPTIONS"],
        **_replica.get("OPTIONS", {}),
        "connect_timeout": 2,
    }
    _replica["DISABLE_SERVER_SIDE_CURSORS"] = DATABASES["default"].get(
        "DISABLE_SERVER_SIDE_CURSORS", False
    )
    # Tests create no database of its own: the alias reads the test database.
    _replica["TEST"] = {"MIRROR": "default"}
    DATABASES["replica"] = _replica
    DATABASE_ROUTERS = ["rungwise.dbrouter.ReplicaRouter"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "annotation:home"

# --- Single sign-on: OpenID Connect (sso/README.md) ---------------------------------------------
# mozilla-django-oidc's settings, read from environment variables of the same names. Sign-in
# with the provider is offered when OIDC_RP_CLIENT_ID and OIDC_OP_AUTHORIZATION_ENDPOINT are
# set; `manage.py sso_discover <issuer>` prints the endpoint lines from the provider's
# discovery document. The client secret comes from the environment only.
OIDC_RP_CLIENT_ID = os.environ.get("OIDC_RP_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = os.environ.get("OIDC_RP_CLIENT_SECRET", "")
OIDC_OP_ISSUER = os.environ.get("OIDC_OP_ISSUER", "")
OIDC_OP_AUTHORIZATION_ENDPOINT = os.environ.get("OIDC_OP_AUTHORIZATION_ENDPOINT", "")
OIDC_OP_TOKEN_ENDPOINT = os.environ.get("OIDC_OP_TOKEN_ENDPOINT", "")
OIDC_OP_USER_ENDPOINT = os.environ.get("OIDC_OP_USER_ENDPOINT", "")
OIDC_OP_JWKS_ENDPOINT = os.environ.get("OIDC_OP_JWKS_ENDPOINT", "")
OIDC_RP_SIGN_ALGO = os.environ.get("OIDC_RP_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = "openid email profile"
OIDC_USE_PKCE = True
OIDC_TIMEOUT = 10
OIDC_AUTHENTICATION_CALLBACK_URL = "sso:callback"
# New accounts for verified addresses nobody uses yet (off: only existing accounts sign in).
OIDC_CREATE_USER = os.environ.get("RUNGWISE_SSO_CREATE_USERS", "1") != "0"
RUNGWISE_SSO_NAME = os.environ.get("RUNGWISE_SSO_NAME", "your organisation")
# Rungwise's own passwords (0: the provider only; API tokens still work).
RUNGWISE_LOCAL_PASSWORDS = os.environ.get("RUNGWISE_LOCAL_PASSWORDS", "1") != "0"
if OIDC_RP_CLIENT_ID:
    AUTHENTICATION_BACKENDS.append("sso.backends.VerifiedEmailBackend")
if not RUNGWISE_LOCAL_PASSWORDS:
    if not (OIDC_RP_CLIENT_ID and OIDC_OP_AUTHORIZATION_ENDPOINT):
        raise ImproperlyConfigured(
            "RUNGWISE_LOCAL_PASSWORDS=0 needs single sign-on configured (OIDC_RP_CLIENT_ID, "
            "OIDC_OP_AUTHORIZATION_ENDPOINT …): nobody could sign in."
        )
    AUTHENTICATION_BACKENDS = ["sso.backends.VerifiedEmailBackend"]

# Mail (password reset, e-mail change links): SMTP when EMAIL_HOST is set, else the console
# (each message printed where `make run` runs), so every mail flow works on a laptop.
EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "587"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", default=EMAIL_PORT == 587)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", default=EMAIL_PORT == 465)
EMAIL_TIMEOUT = 10
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND") or (
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend"
)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "Rungwise <rungwise@localhost>")
#: How long a password-reset or e-mail-change link works (seconds).
PASSWORD_RESET_TIMEOUT = int(os.environ.get("RUNGWISE_MAIL_LINK_MAX_AGE", 3 * 24 * 3600))
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", BASE_DIR / "var" / "media"))
MEDIA_URL = "media/"
STORAGES: dict[str, dict[str, object]] = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if not DEBUG and env_bool("WHITENOISE_MANIFEST", default=True)
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = True
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 50 * 1024 * 1024

# --- Files on object storage (rungwise/storage.py; docs/deployment.md, "Files") ---------------
# With several web and worker hosts, a file one writes (an upload, a release built on a worker)
# must be readable by every other: RUNGWISE_S3_BUCKET puts them in an S3-compatible bucket
# (AWS S3, MinIO, Ceph, R2, ...). Unset: MEDIA_ROOT, the embedded default. Credentials:
# AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, else boto3's own chain (an instance role).
RUNGWISE_S3_BUCKET = os.environ.get("RUNGWISE_S3_BUCKET", "").strip()
if RUNGWISE_S3_BUCKET:
    from boto3.s3.transfer import TransferConfig

    _s3_endpoint = os.environ.get("RUNGWISE_S3_ENDPOINT_URL", "").strip() or None
    # Multipart above 8 MB in 8 MB parts; at most 4 parts in memory (32 MB) while they are
    # sent, whatever the file's size (boto3's constructor does not take the last one).
    _s3_transfer = TransferConfig(
        multipart_threshold=8 * 1024 * 1024, multipart_chunksize=8 * 1024 * 1024, max_concurrency=4
    )
    _s3_transfer.max_in_memory_upload_chunks = 4
    STORAGES["default"] = {
        "BACKEND": "rungwise.storage.ObjectStorage",
        "OPTIONS": {
            "bucket_name": RUNGWISE_S3_BUCKET,
            "endpoint_url": _s3_endpoint,
            "region_name": os.environ.get("RUNGWISE_S3_REGION", "").strip() or None,
            "access_key": os.environ.get("AWS_ACCESS_KEY_ID") or None,
            "secret_key": os.environ.get("AWS_SECRET_ACCESS_KEY") or None,
            # Keys under this prefix, so one bucket can serve several sites.
            "location": os.environ.get("RUNGWISE_S3_PREFIX", "").strip().strip("/"),
            # Self-hosted stores (MinIO, moto) answer on one host name: path-style addresses.
            "addressing_style": os.environ.get("RUNGWISE_S3_ADDRESSING_STYLE", "").strip()
            or ("path" if _s3_endpoint else None),
            "signature_version": "s3v4",
            # Two imports of "items.csv" in one month keep two files, as on the file system.
            "file_overwrite": False,
            # Private objects; nothing here hands out their URLs (downloads stream: see
            # docs/deployment.md, "Files").
            "default_acl": None,
            "querystring_auth": True,
            "querystring_expire": 300,
            "transfer_config": _s3_transfer,
        },
    }

# --- Security (production differs only through the environment) ------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the cookie-less meta tag; keep default
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if not DEBUG and env_bool("SECURE_COOKIES", default=SERVES_BEYOND_LOOPBACK):
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

# --- Cache ----------------------------------------------------------------------------------
# The API's throttle counters live in the cache: with several web processes they must share one
# (Redis), or every gunicorn worker would count on its own and allow its own full rate.
CACHE_URL = os.environ.get("CACHE_URL", "")
if CACHE_URL:
    if not CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured(
            f"CACHE_URL must be a Redis URL (redis://host:port/db), not {CACHE_URL!r}."
        )
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
    }

# --- Celery ---------------------------------------------------------------------------------
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
# With no broker the embedded default runs tasks in-process: one sent while a request is served
# (or by such a task) runs after the response, on one background worker per process, no sooner
# than its countdown; one sent elsewhere (commands, seed_demo) at the moment it is enqueued —
# for on-commit enqueues, right after the transaction commits (rungwise/inprocess.py).
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
# Where those tasks run (rungwise/inprocess.py): "process", one worker process that the web
# process starts, on the same database, so that a task's Python (plotting, statistics) does not
# hold the web process's GIL while a submit is served (benchmarks/README.md, "Embedded
# default"); "thread", a thread of the web process.
INPROCESS_WORKER = os.environ.get("RUNGWISE_INPROCESS_WORKER", "process").strip() or "process"
if INPROCESS_WORKER not in {"process", "thread"}:
    raise ImproperlyConfigured(
        f"RUNGWISE_INPROCESS_WORKER is {INPROCESS_WORKER!r}: say 'process' or 'thread'."
    )
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_BROKER_URL = CELERY_BROKER_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True  # a worker killed mid-task leaves the message for another worker
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = 15 * 60
CELERY_TASK_SOFT_TIME_LIMIT = 14 * 60
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Publishing must not hang a web request when Redis is down: fail fast, and the beat sweep
# enqueues whatever was missed once the broker is back. The socket timeouts bound a publish to a
# Redis that accepts connections but does not answer (frozen, half-open connection); they must
# exceed kombu's 1 s BRPOP timeout. visibility_timeout: a message a killed worker held comes back
# after this long (the sweeps repair sooner); keep it above the longest task and countdown.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "socket_connect_timeout": 2,
    "socket_timeout": float(os.environ.get("CELERY_BROKER_SOCKET_TIMEOUT", "3")),
    "visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "3600")),
}
CELERY_TASK_PUBLISH_RETRY = False
# A model run (llm.runs) whose worker has not beaten its heartbeat for this long is taken over.
LLM_RUN_STALE_SECONDS = int(os.environ.get("LLM_RUN_STALE_SECONDS", "120"))
# Where model endpoints' rate budgets are shared (llm/budget.py): default, the Celery broker.
LLM_REDIS_URL = os.environ.get("LLM_REDIS_URL", "")
# How long a completed item may wait for its resolve message before the sweep resolves it.
SWEEP_GRACE_SECONDS = float(os.environ.get("SWEEP_GRACE_SECONDS", "30"))
CELERY_BEAT_SCHEDULE = {
    "reclaim-expired-leases": {
        "task": "annotation.tasks.reclaim_expired_leases",
        "schedule": float(os.environ.get("SWEEP_SECONDS", "60")),
    },
    "sweep-unresolved": {
        "task": "annotation.tasks.sweep_unresolved",
        "schedule": float(os.environ.get("SWEEP_SECONDS", "60")),
    },
    "sweep-agreement": {
        "task": "agreement.tasks.sweep_agreement",
        "schedule": float(os.environ.get("SWEEP_SECONDS", "60")),
    },
    # Release builds and imports whose message was lost (broker down or restarted empty) or
    # whose worker died: sent again, and failed with a reason after three started attempts.
    "sweep-stuck-releases": {
        "task": "releases.tasks.sweep_stuck_releases",
        "schedule": float(os.environ.get("SWEEP_SECONDS", "60")),
    },
    "sweep-stuck-imports": {
        "task": "imports.tasks.sweep_stuck_imports",
        "schedule": float(os.environ.get("SWEEP_SECONDS", "60")),
    },
    # Crowd sessions past their study's time limit; Prolific submission statuses.
    "crowd-time-out": {
        "task": "crowd.tasks.time_out_participants",
        "schedule": float(os.environ.get("SWEEP_SECONDS", "60")),
    },
    "crowd-sync-prolific": {
        "task": "crowd.tasks.sync_prolific_studies",
        "schedule": float(os.environ.get("CROWD_SYNC_SECONDS", "300")),
    },
    # Release evaluations whose message was lost or whose worker died (llm/evaluation).
    "sweep-stuck-evaluations": {
        "task": "llm.evaluation.tasks.evaluations_sweep",
        "schedule": float(os.environ.get("SWEEP_SECONDS", "60")),
    },
    # Model runs whose message was lost or whose worker died (llm.runs, heartbeat).
    "llm-runs-sweep": {
        "task": "llm.tasks.runs_sweep",
        "schedule": float(os.environ.get("SWEEP_SECONDS", "60")),
    },
    "llm-generations-sweep": {
        "task": "llm.tasks.generations_sweep",
        "schedule": float(os.environ.get("SWEEP_SECONDS", "60")),
    },
    # Slot counters recounted from the rows (a lease deleted outside the services, say).
    "repair-counters": {
        "task": "annotation.tasks.repair_counters",
        "schedule": float(os.environ.get("REPAIR_SECONDS", "900")),
    },
}
# --- Queues by kind of work (docs/deployment.md, "Queues") -----------------------------------
# Interactive work, which people wait for (an item stage resolved so the next stage opens, an
# agreement refresh, a participant timed out), and bulk work (imports, release builds, model
# runs, payments and syncs with outside services, webhook deliveries) wait in separate queues,
# so a worker busy with a 1,000,000-row import never delays a resolution: run a worker per
# queue (`celery -A rungwise worker -Q interactive` and `-Q bulk`, as docker-compose.yml does).
# A worker started without -Q serves both (the embedded default runs tasks in-process).
# A task not named below goes to the interactive queue: a new long task must be added here
# (tests/hosts/test_queues.py fails on an unrouted task of the apps).
from kombu import Queue  # noqa: E402

CELERY_TASK_QUEUES = (Queue("interactive"), Queue("bulk"))
CELERY_TASK_DEFAULT_QUEUE = "interactive"
#: Task name (glob) → queue. Interactive: annotation.tasks.resolve_item_stage,
#: reclaim_expired_leases, sweep_unresolved; agreement.tasks.*; ratings.tasks.refresh_analysis;
#: crowd.tasks.time_out_participants.
BULK_TASKS = (
    "imports.tasks.*",
    "releases.tasks.*",
    "llm.*",
    "webhooks.*",
    "annotation.tasks.repair_counters",
    "crowd.tasks.sync_prolific_study",
    "crowd.tasks.sync_prolific_studies",
    "crowd.tasks.pay_bonus",
    "annotation.tasks.item_search_index",
)
INTERACTIVE_TASKS = (
    "annotation.tasks.resolve_item_stage",
    "annotation.tasks.reclaim_expired_leases",
    "annotation.tasks.sweep_unresolved",
    "agreement.tasks.*",
    "ratings.tasks.*",
    "quality.*",
    "crowd.tasks.time_out_participants",
    "annotation.tasks.store_pipeline_counts",
    "annotation.tasks.resolve_item_stages",
)
CELERY_TASK_ROUTES = {
    **{pattern: {"queue": "bulk"} for pattern in BULK_TASKS},
    **{pattern: {"queue": "interactive"} for pattern in INTERACTIVE_TASKS},
}

# Agreement refresh coalescing (agreement.services.stage_agreement_changed): a refresh waits
# AGREEMENT_REFRESH_DELAY seconds after the first change, and at least AGREEMENT_REFRESH_INTERVAL
# seconds after the previous refresh, gathering every change in between into one computation.
AGREEMENT_REFRESH_DELAY = float(os.environ.get("AGREEMENT_REFRESH_DELAY", "2"))
AGREEMENT_REFRESH_INTERVAL = float(os.environ.get("AGREEMENT_REFRESH_INTERVAL", "30"))
# The ratings page's stored analysis (ratings.services.analysis_refresh_request) is recomputed
# RATINGS_ANALYSIS_DELAY seconds after the first change of a burst.
RATINGS_ANALYSIS_DELAY = float(os.environ.get("RATINGS_ANALYSIS_DELAY", "2"))

# --- Crowd studies (crowd/) ------------------------------------------------------------------
#: Prolific's researcher API: the token (Settings → API tokens on Prolific) and the base URL.
PROLIFIC_TOKEN = os.environ.get("PROLIFIC_TOKEN", "")
PROLIFIC_API_URL = os.environ.get("PROLIFIC_API_URL", "https://api.prolific.com/api/v1/")
#: Where a finished Prolific participant is sent, with ?cc=<completion or screen-out code>.
PROLIFIC_COMPLETE_URL = os.environ.get(
    "PROLIFIC_COMPLETE_URL", "https://app.prolific.com/submissions/complete"
)
#: Signed Prolific study links (crowd/signing.py): the key set that verifies Prolific's tokens
#: (a JWKS document as JSON, or the path of a file holding one; Prolific publishes it at
#: https://api.prolific.com/.well-known/study/jwks.json), the query parameter that carries the
#: token, the audiences accepted (comma-separated; empty: this site's host) and, when set, the
#: workspace the token's ``prolific`` claim must name.
PROLIFIC_JWKS = os.environ.get("PROLIFIC_JWKS", "")
PROLIFIC_JWT_PARAM = os.environ.get("PROLIFIC_JWT_PARAM", "PROLIFIC_JWT")
PROLIFIC_JWT_AUDIENCE = tuple(
    value.strip()
    for value in os.environ.get("PROLIFIC_JWT_AUDIENCE", "").split(",")
    if value.strip()
)
PROLIFIC_WORKSPACE_ID = os.environ.get("PROLIFIC_WORKSPACE_ID", "")
#: Seconds before the first retry of a bonus set-up Prolific could not take (doubling, ≤ 600).
CROWD_BONUS_RETRY_SECONDS = float(os.environ.get("CROWD_BONUS_RETRY_SECONDS", "30"))
#: The turkSubmitTo hosts an MTurk entry may name (the live site and the sandbox).
CROWD_MTURK_SUBMIT_HOSTS = tuple(
    host.strip().rstrip("/")
    for host in os.environ.get(
        "CROWD_MTURK_SUBMIT_HOSTS", "https://www.mturk.com,https://workersandbox.mturk.com"
    ).split(",")
    if host.strip()
)

# --- REST API -------------------------------------------------------------------------------
#: How long an API token lives (seconds; default 30 days). A changed password ends it at once.
API_TOKEN_MAX_AGE_SECONDS = int(os.environ.get("RUNGWISE_API_TOKEN_MAX_AGE", 30 * 24 * 3600))

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "api.auth.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON bodies are read within the import limits (nesting, NUL, surrogates): api/parsers.py.
    "DEFAULT_PARSER_CLASSES": [
        "api.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "api.schema.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    "NUM_PROXIES": TRUSTED_PROXIES,
    # Throttled views name their scope (ScopedRateThrottle): "auth" on the token endpoint,
    # "submit" on annotation submits. "off" disables a scope (benchmarks, load tests).
    "DEFAULT_THROTTLE_RATES": {
        "auth": os.environ.get("RUNGWISE_THROTTLE_AUTH", "20/min"),
        "submit": os.environ.get("RUNGWISE_THROTTLE_SUBMIT", "120/min"),
    },
}
# Import files up to this size run inside the upload request; larger ones in a Celery task.
#: The largest file an import (items, ratings, model answers) takes; larger ones are refused
#: before anything is stored.
RUNGWISE_UPLOAD_MAX_BYTES = int(os.environ.get("RUNGWISE_UPLOAD_MAX_BYTES", 512 * 1024 * 1024))
RUNGWISE_IMPORT_INLINE_MAX_BYTES = int(os.environ.get("RUNGWISE_IMPORT_INLINE_MAX_BYTES", 1 << 20))
SPECTACULAR_SETTINGS = {
    "TITLE": "Rungwise API",
    "DESCRIPTION": "Projects, stages, items, imports, annotation, agreement and releases.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI and Redoc from this site (drf-spectacular-sidecar), never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": "/api/",
    "ENUM_NAME_OVERRIDES": {
        "ItemStatusEnum": "annotation.models.Item.Status",
        "ImportStatusEnum": "imports.models.ImportBatch.Status",
        "ReleaseStatusEnum": "releases.models.Release.Status",
        "AssignmentStatusEnum": "annotation.models.Assignment.Status",
    },
    "TAGS": [
        {"name": "auth", "description": "Token for scripts (the browser uses its session)."},
        {"name": "projects", "description": "Projects, stages, items and agreement figures."},
        {"name": "imports", "description": "Upload CSV / JSON Lines / JSON files of items."},
        {"name": "annotate", "description": "The annotator loop: next item, submit, skip."},
        {"name": "releases", "description": "Versioned, immutable, checksummed releases."},
    ],
}

# --- Webhooks (webhooks/) ------------------------------------------------------------------------
#: Networks webhooks may reach although they are not public (comma-separated CIDR, e.g.
#: "10.0.0.0/8,127.0.0.0/8"): by default none, so no private, loopback or link-local address is
#: ever requested (webhooks/addresses.py).
WEBHOOKS_ALLOWED_NETWORKS = tuple(
    network.strip()
    for network in os.environ.get("WEBHOOKS_ALLOWED_NETWORKS", "").split(",")
    if network.strip()
)
#: Seconds a receiver has to connect and answer.
WEBHOOKS_TIMEOUT_SECONDS = float(os.environ.get("WEBHOOKS_TIMEOUT_SECONDS", "10"))
#: Back-off after a failure: this many seconds × 2^(failures in a row − 1), at most the maximum.
WEBHOOKS_BACKOFF_SECONDS = float(os.environ.get("WEBHOOKS_BACKOFF_SECONDS", "10"))
WEBHOOKS_BACKOFF_MAX_SECONDS = float(os.environ.get("WEBHOOKS_BACKOFF_MAX_SECONDS", "3600"))
#: A hook is switched off (and its project's admins told) after this many failures in a row.
WEBHOOKS_DISABLE_AFTER_FAILURES = int(os.environ.get("WEBHOOKS_DISABLE_AFTER_FAILURES", "10"))
#: How long a delivery message counts as on its way before the next event sends another.
WEBHOOKS_WAKE_GRACE_SECONDS = float(os.environ.get("WEBHOOKS_WAKE_GRACE_SECONDS", "60"))
CELERY_BEAT_SCHEDULE["webhooks-sweep"] = {
    "task": "webhooks.tasks.sweep",
    "schedule": float(os.environ.get("SWEEP_SECONDS", "60")),
}
#: The bodies receivers get, in the OpenAPI schema (webhooks/schema.py).
SPECTACULAR_SETTINGS["WEBHOOKS"] = ["webhooks.schema.EVENTS_WEBHOOK"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
    # With tasks in-process the broker is kombu's in-memory transport, which has no host: its
    # "No hostname was supplied" warning (on seed_demo, simulate_annotations) says nothing.
    "loggers": {"kombu.connection": {"level": "ERROR"}} if CELERY_TASK_ALWAYS_EAGER else {},
}

# --- Stored pages of large stages (agreement/stored.py) ---------------------------------------
# A stage with at least AGREEMENT_STORED_FROM items is shown from counts and figures a Celery task
# stores, asked for again when older than AGREEMENT_STORED_MAX_AGE seconds; smaller stages are
# counted and drawn on each request.
AGREEMENT_STORED_FROM = int(os.environ.get("AGREEMENT_STORED_FROM", "20000"))
AGREEMENT_STORED_MAX_AGE = float(os.environ.get("AGREEMENT_STORED_MAX_AGE", "30"))

# The data manager's search index (annotation/search.py): items written other than by an
# import (which sends the task on commit) are indexed within a minute; until then the search
# reads them directly.
CELERY_BEAT_SCHEDULE["item-search-index"] = {
    "task": "annotation.tasks.item_search_index",
    "schedule": float(os.environ.get("SWEEP_SECONDS", "60")),
}


# --- Stored pipeline counts (annotation/pipeline_counts.py) ------------------------------------
# A project with at least PIPELINE_STORED_FROM resolutions shows the project home's pipeline
# counts as a Celery task stored them, asked for again when older than PIPELINE_STORED_MAX_AGE
# seconds; a smaller project is counted on each request.
PIPELINE_STORED_FROM = int(os.environ.get("PIPELINE_STORED_FROM", "20000"))
PIPELINE_STORED_MAX_AGE = float(os.environ.get("PIPELINE_STORED_MAX_AGE", "60"))

# --- Stored ratings counts (ratings/stored_counts.py) ------------------------------------------
# A ratings project with at least RATINGS_STORED_FROM items and historic ratings together shows
# the counts its imports determine (pairs, items, historic ratings and raters) as a Celery task
# stored them, asked for again when older than RATINGS_STORED_MAX_AGE seconds and after every
# import; a smaller project is counted on each request.
RATINGS_STORED_FROM = int(os.environ.get("RATINGS_STORED_FROM", "20000"))
RATINGS_STORED_MAX_AGE = float(os.environ.get("RATINGS_STORED_MAX_AGE", "60"))


# --- Interop (interop/): Label Studio and Potato exports in, Label Studio tasks out -------------
INSTALLED_APPS += ["interop"]


# --- The Hugging Face Hub (releases/hf_push.py) -----------------------------------------------
# A release's dataset folder is pushed with the token HF_TOKEN (a write token of the user or
# organisation that owns the repositories) to HF_ENDPOINT (the Hub, or a local test server).
HF_TOKEN = os.environ.get("HF_TOKEN", "")
HF_ENDPOINT = os.environ.get("HF_ENDPOINT", "").strip() or "https://huggingface.co"
# How the shards travel: "lfs" (the default: the Git LFS transfer, the path the tests exercise
# against tests/releases/hub_server.py) or "xet" (huggingface_hub's Xet storage, which the Hub
# also takes; faster for large folders, not exercised by the tests).
HF_TRANSFER = os.environ.get("HF_TRANSFER", "lfs").strip().lower()
if HF_TRANSFER not in ("lfs", "xet"):
    raise ImproperlyConfigured(f"HF_TRANSFER must be lfs or xet, not {HF_TRANSFER!r}")

# --- Resolution messages batched (annotation/services/resolution_publish.py) -----------------
# A submit that fills an item stage queues its id; one message per RESOLVE_PUBLISH_WINDOW_SECONDS
# (or per RESOLVE_PUBLISH_BATCH ids) resolves them all. 0 sends one message per item stage. A
# lost batch waits for the sweep (SWEEP_GRACE_SECONDS), as a lost single message does.
RESOLVE_PUBLISH_WINDOW_SECONDS = float(os.environ.get("RESOLVE_PUBLISH_WINDOW_SECONDS", "0.1"))
RESOLVE_PUBLISH_BATCH = int(os.environ.get("RESOLVE_PUBLISH_BATCH", "100"))

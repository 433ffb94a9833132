"""EchoStudio settings: one module, read from environment variables.

With nothing set, EchoStudio runs on embedded defaults: SQLite, media on the local disk, and a
Celery broker kept in files under var/ so a real worker process runs tasks without any server.
Production sets DATABASE_URL, CELERY_BROKER_URL and ECHOSTUDIO_S3_BUCKET (see README).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import PermissionDenied

from webapp.env import (
    ImproperSetting,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_proxy_ssl_header,
    env_str,
    parse_database_url,
    secret_key_problem,
    stored_secret_key,
)
from webapp.lib.client_address import trusted_networks
from webapp.lib.outbound import allowed_hosts, parse_key_hosts
from webapp.lib.snapshots import backup_schedule

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("ECHOSTUDIO_VAR_DIR") or BASE_DIR / "var")

# Fail closed: production never runs with DEBUG, and never on a key anyone else could know.
PRODUCTION = env_bool("ECHOSTUDIO_PRODUCTION", False)
DEBUG = env_bool("DJANGO_DEBUG", False)
if DEBUG and PRODUCTION:
    raise ImproperSetting("DJANGO_DEBUG=1 is refused with ECHOSTUDIO_PRODUCTION=1 (debug pages leak secrets)")
SECRET_KEY = env_str("DJANGO_SECRET_KEY")
if PRODUCTION and (problem := secret_key_problem(SECRET_KEY)):
    raise ImproperSetting(
        f"DJANGO_SECRET_KEY must be set to at least 50 random characters in production (it {problem}): "
        "python -c 'import secrets; print(secrets.token_urlsafe(50))', the same on every machine"
    )
if not SECRET_KEY:
    # Outside production: a random key made once and kept in the var folder (mode 0600).
    SECRET_KEY = stored_secret_key(VAR_DIR / "secret_key")
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "webapp",
    "annotation",
    "evaluation",
    "ml",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    # Django's AuthenticationMiddleware, with the user and roles read with the session (webapp.sessions).
    "webapp.sessions.SessionUserMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "webapp.security.ContentSecurityPolicyMiddleware",
    # After authentication: a key is scoped to who sent it (webapp.idempotency).
    "webapp.idempotency.IdempotencyMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its lockout response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "webapp.urls"
WSGI_APPLICATION = "webapp.wsgi.application"

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
                "webapp.roles.role_context",
            ],
        },
    }
]

DATABASE_URL = env_str("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'echostudio.sqlite3'}"
DATABASES = {"default": parse_database_url(DATABASE_URL, base_dir=BASE_DIR)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "webapp.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Database sessions whose one read brings the signed-in user and their roles (webapp.sessions).
SESSION_ENGINE = "webapp.sessions"
AUTHENTICATION_BACKENDS = [
    # django-axes first: it refuses a login for a locked-out user name and address before any check.
    "webapp.security.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Password guessing: after AXES_FAILURE_LIMIT failures for one user name from one address, that
# pair is locked out for the cool-off time (a success resets the count). Unlock early with
# `manage.py axes_reset_username NAME` or in Django admin (Access attempts).
AXES_FAILURE_LIMIT = env_int("ECHOSTUDIO_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("ECHOSTUDIO_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# The address is the client's, behind a proxy too (webapp.security.client_ip).
AXES_CLIENT_IP_CALLABLE = "webapp.security.client_ip"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
MEDIA_ROOT = Path(env_str("ECHOSTUDIO_MEDIA_ROOT") or VAR_DIR / "media")
MEDIA_URL = "/media/"

# Media: S3 when a bucket is configured, the local disk otherwise. Either way browsers only
# ever get audio through webapp.storage.audio_url, which never exposes who made a file.
S3_BUCKET = env_str("ECHOSTUDIO_S3_BUCKET")
AUDIO_URL_TTL_SECONDS = env_int("ECHOSTUDIO_AUDIO_URL_TTL_SECONDS", 900, minimum=30)
# Crowd raters (evaluation.studies.crowd): a passed headphone and hearing check qualifies them
# this long; after it they take both checks again before rating on, as ITU-T P.808 has crowd
# raters re-qualify for a new session.
CROWD_QUALIFICATION_HOURS = env_float("ECHOSTUDIO_CROWD_QUALIFICATION_HOURS", 2.0, minimum=0.01)
if S3_BUCKET:
    STORAGES = {
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": S3_BUCKET,
                "region_name": env_str("AWS_S3_REGION_NAME") or None,
                "endpoint_url": env_str("AWS_S3_ENDPOINT_URL") or None,
                "querystring_auth": True,
                "querystring_expire": AUDIO_URL_TTL_SECONDS,
                "signature_version": "s3v4",
                "default_acl": None,
                "file_overwrite": False,
            },
        },
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
else:
    STORAGES = {
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(MEDIA_ROOT)},
        },
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }

UPLOAD_MAX_BYTES = env_int("ECHOSTUDIO_UPLOAD_MAX_BYTES", 50 * 1024 * 1024, minimum=1024)
# Everything one request may upload, archives included: refused from its Content-Length (and the
# bytes that arrive) before a byte of it is written (webapp.uploads). nginx's client_max_body_size
# should be no smaller.
REQUEST_UPLOAD_MAX_BYTES = env_int("ECHOSTUDIO_REQUEST_UPLOAD_MAX_BYTES", 4 * 1024**3, minimum=1024)
FILE_UPLOAD_HANDLERS = [
    "webapp.uploads.UploadCap",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
# Unpacking an uploaded zip (webapp.lib.archives): no member, and no archive, may expand more than
# this many times (a zip bomb's ratio is ~1,000), checked on the listing before anything is written.
ARCHIVE_MAX_RATIO = env_float("ECHOSTUDIO_ARCHIVE_MAX_RATIO", 100.0, minimum=1.0)
# The licence exported datasets carry in their cards (a Hugging Face licence id).
ECHOEVAL_LICENSE = env_str("ECHOSTUDIO_DATASET_LICENSE", "cc-by-nc-4.0")
# What one gold import may unpack to; an export of 100,000 items with 5 s of audio each is ~16 GB.
GOLD_IMPORT_MAX_BYTES = env_int("ECHOSTUDIO_GOLD_IMPORT_MAX_BYTES", 20 * 1024**3, minimum=1024)
# Every URL an admin or a build configures (judges, draft and builder LLMs, TTS, classifiers,
# output audio) is called only on public hosts unless these allow internal ones: all of them, or
# the named hosts (a lab's vLLM box, tests' local servers). Policy: webapp.lib.outbound.
OUTBOUND_ALLOW_INTERNAL_HOSTS = env_bool(
    "ECHOSTUDIO_OUTBOUND_ALLOW_INTERNAL_HOSTS",
    env_bool("ECHOSTUDIO_OUTPUT_AUDIO_ALLOW_INTERNAL_HOSTS", False),  # its older, narrower name
)
# Each entry a host (every port) or host:port / [v6]:port (that port only).
OUTBOUND_ALLOWED_HOSTS = env_list("ECHOSTUDIO_OUTBOUND_ALLOWED_HOSTS", [])
try:
    allowed_hosts(OUTBOUND_ALLOWED_HOSTS)
except ValueError as exc:
    raise ImproperSetting(f"ECHOSTUDIO_OUTBOUND_ALLOWED_HOSTS: {exc}") from None
# The host each ECHOSTUDIO_JUDGE_KEY_* key may be sent to: "ECHOSTUDIO_JUDGE_KEY_OPENAI=api.openai.com,
# ECHOSTUDIO_JUDGE_KEY_LAB=gpu-box:8000". A key bound to no host is sent nowhere.
OUTBOUND_KEY_HOSTS = parse_key_hosts(env_str("ECHOSTUDIO_OUTBOUND_KEY_HOSTS"))
# Caps on one output import's audio (zip, folder or S3 prefix), checked on the listing and while reading.
OUTPUT_IMPORT_MAX_FILES = env_int("ECHOSTUDIO_OUTPUT_IMPORT_MAX_FILES", 20_000, minimum=1)
OUTPUT_IMPORT_MAX_BYTES = env_int("ECHOSTUDIO_OUTPUT_IMPORT_MAX_BYTES", 4 * 1024**3, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

# Celery. The embedded default keeps messages in files under var/broker: no server to run, yet
# tasks still execute in a separate worker process (never eager mode) so progress is real.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or "filesystem://"
# Its own variable so a process given another VAR_DIR (a test's worker) can stay on the same queue.
BROKER_DIR = Path(env_str("ECHOSTUDIO_BROKER_DIR") or VAR_DIR / "broker")
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }
elif CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    # A message whose worker died is redelivered after this long (acks_late keeps it unacked).
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=10)
    }
CELERY_TASK_DEFAULT_QUEUE = "default"
# Where EchoDialogue build stages go: a lab that outgrows one queue names pools of their own for
# the CPU-heavy audio stages (eSpeak, Praat) and the many light LLM stages (README, "Many workers").
BUILDER_AUDIO_QUEUE = env_str("ECHOSTUDIO_BUILDER_AUDIO_QUEUE").strip() or "default"
BUILDER_LLM_QUEUE = env_str("ECHOSTUDIO_BUILDER_LLM_QUEUE").strip() or "default"
# Every queue a job may be sent to; a local worker (`make run`) consumes them all.
JOB_QUEUES = tuple(dict.fromkeys(("default", "gpu", BUILDER_AUDIO_QUEUE, BUILDER_LLM_QUEUE)))
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# A running job whose heartbeat is older than this is considered orphaned (its worker died).
JOB_HEARTBEAT_SECONDS = env_float("ECHOSTUDIO_JOB_HEARTBEAT_SECONDS", 5.0, minimum=0.1)
JOB_STALE_AFTER_SECONDS = env_float("ECHOSTUDIO_JOB_STALE_AFTER_SECONDS", 60.0, minimum=0.5)
JOB_MAX_ATTEMPTS = env_int("ECHOSTUDIO_JOB_MAX_ATTEMPTS", 2, minimum=1)
# Celery beat runs the reaper; `make run` starts beat, production runs one beat process (README).
JOB_REAP_EVERY_SECONDS = env_float(
    "ECHOSTUDIO_JOB_REAP_EVERY_SECONDS", JOB_STALE_AFTER_SECONDS / 2, minimum=0.5
)
# How long an API write's Idempotency-Key is remembered (webapp.idempotency); beat forgets older ones.
IDEMPOTENCY_KEY_HOURS = env_float("ECHOSTUDIO_IDEMPOTENCY_KEY_HOURS", 24.0, minimum=0.01)
# A queued job still not started after this long is sent to the broker again (a broker restarted
# without persistence loses what it held); the copy is dropped if the first one started it.
JOB_RESEND_QUEUED_AFTER_SECONDS = env_float("ECHOSTUDIO_JOB_RESEND_QUEUED_AFTER_SECONDS", 600.0, minimum=1.0)
# Each later send waits twice as long as the one before (10 min, 20, 40 ...); a job sent this many
# times that no worker started fails, saying which queue has no worker (webapp.jobs).
JOB_MAX_SENDS = env_int("ECHOSTUDIO_JOB_MAX_SENDS", 8, minimum=1)
# Database and broker connection errors inside a job (a restart, a network blip) are retried after
# FIRST seconds, twice as long each time up to MAX, TRANSIENT times (about 3 minutes in all by
# default) before the job fails (webapp.db.retry_transient).
JOB_RETRY_FIRST_SECONDS = env_float("ECHOSTUDIO_JOB_RETRY_FIRST_SECONDS", 1.0, minimum=0.0)
JOB_RETRY_MAX_SECONDS = env_float("ECHOSTUDIO_JOB_RETRY_MAX_SECONDS", 60.0, minimum=JOB_RETRY_FIRST_SECONDS)
JOB_RETRY_TRANSIENT = env_int("ECHOSTUDIO_JOB_RETRY_TRANSIENT", 8, minimum=0)
# A request that needs the database or the broker while it is down is answered 503 with this
# Retry-After (webapp.outages), never 500.
OUTAGE_RETRY_AFTER_SECONDS = env_int("ECHOSTUDIO_OUTAGE_RETRY_AFTER_SECONDS", 5, minimum=1)
CELERY_BEAT_SCHEDULE = {
    "reap-stale-jobs": {"task": "webapp.reap_stale_jobs", "schedule": JOB_REAP_EVERY_SECONDS},
    "purge-idempotency-keys": {"task": "webapp.purge_idempotency_keys", "schedule": 3600.0},
}
# Scheduled backups (docs/deployment.md, "Backups"), off by default: with a target (a folder or
# s3://bucket/prefix) and a count to keep, beat writes a snapshot every BACKUP_EVERY_HOURS into
# its own folder under the target and removes all but the newest BACKUP_KEEP.
BACKUP_TARGET = env_str("ECHOSTUDIO_BACKUP_TARGET")
BACKUP_KEEP = env_int("ECHOSTUDIO_BACKUP_KEEP", 0, minimum=0)
BACKUP_EVERY_HOURS = env_float("ECHOSTUDIO_BACKUP_EVERY_HOURS", 24.0, minimum=0.01)
CELERY_BEAT_SCHEDULE.update(backup_schedule(BACKUP_TARGET, BACKUP_KEEP, BACKUP_EVERY_HOURS))

# Take QC by the pretrained speech models (annotation/audio/speech, issue 26): script check,
# trimming, pauses, quality, loudness, speaker. A flag sends a take to review with its reason,
# never rejects it. Each model's weights can be a lab's own by path (annotation/audio/speech/paths.py).
SPEECH_CHECKS = env_bool("ECHOSTUDIO_SPEECH_CHECKS", True)
SPEECH_CHECK_DOUBTFUL_WORD_RATIO = env_float("ECHOSTUDIO_SPEECH_CHECK_DOUBTFUL_WORD_RATIO", 3.0, minimum=1.0)
SPEECH_CHECK_DOUBTFUL_SPEAKER = env_float("ECHOSTUDIO_SPEECH_CHECK_DOUBTFUL_SPEAKER", 0.7, minimum=0.0)
SPEECH_CHECK_MIN_P808 = env_float("ECHOSTUDIO_SPEECH_CHECK_MIN_P808", 3.0, minimum=0.0)
# Below this estimated SNR (dB) the script and speaker checks say "too noisy to check" (issue 39).
SPEECH_CHECK_MIN_SNR_DB = env_float("ECHOSTUDIO_SPEECH_CHECK_MIN_SNR_DB", 5.0)
# Under this much speech heard above the noise (seconds) the voice check says "too short to check".
SPEECH_CHECK_MIN_SPEAKER_SECONDS = env_float("ECHOSTUDIO_SPEECH_CHECK_MIN_SPEAKER_SECONDS", 1.0, minimum=0.0)

# OpenAI-compatible chat endpoints (hosted API or a local vLLM server). Empty base URL = off.
DRAFT_LLM_BASE_URL = env_str("ECHOSTUDIO_DRAFT_LLM_BASE_URL")
DRAFT_LLM_MODEL = env_str("ECHOSTUDIO_DRAFT_LLM_MODEL", "gpt-4o-mini")
DRAFT_LLM_API_KEY = env_str("ECHOSTUDIO_DRAFT_LLM_API_KEY")
DRAFT_LLM_TIMEOUT_SECONDS = env_float("ECHOSTUDIO_DRAFT_LLM_TIMEOUT_SECONDS", 60.0, minimum=0.1)
DRAFT_LLM_MAX_RETRIES = env_int("ECHOSTUDIO_DRAFT_LLM_MAX_RETRIES", 2, minimum=0)
JUDGE_BASE_URL = env_str("ECHOSTUDIO_JUDGE_BASE_URL")
JUDGE_MODEL = env_str("ECHOSTUDIO_JUDGE_MODEL", "gpt-4o")
JUDGE_API_KEY = env_str("ECHOSTUDIO_JUDGE_API_KEY")
JUDGE_TIMEOUT_SECONDS = env_float("ECHOSTUDIO_JUDGE_TIMEOUT_SECONDS", 60.0, minimum=0.1)
JUDGE_MAX_CONCURRENCY = env_int("ECHOSTUDIO_JUDGE_MAX_CONCURRENCY", 4, minimum=1)

# How responses are voiced (reward-model ladder, RL rollouts, inference outputs): "espeak"
# (offline) or "openai" (an OpenAI-compatible /v1/audio/speech server, e.g. Qwen3-TTS behind one).
TTS_BACKEND = env_str("ECHOSTUDIO_TTS_BACKEND", "espeak")
TTS_BASE_URL = env_str("ECHOSTUDIO_TTS_BASE_URL")
TTS_MODEL = env_str("ECHOSTUDIO_TTS_MODEL", "tts-1")
TTS_VOICE = env_str("ECHOSTUDIO_TTS_VOICE", "alloy")
TTS_API_KEY = env_str("ECHOSTUDIO_TTS_API_KEY")
TTS_TIMEOUT_SECONDS = env_float("ECHOSTUDIO_TTS_TIMEOUT_SECONDS", 120.0, minimum=0.1)

# Dialogues (paper B.5 holds five-turn sessions): the most user turns an imported dialogue may hold.
DIALOGUE_MAX_TURNS = env_int("ECHOSTUDIO_DIALOGUE_MAX_TURNS", 5, minimum=1)

# Models for the gpu queue: a local path or s3:// URI; never a hub name.
ECHOCHAT_BASE_MODEL = env_str("ECHOSTUDIO_BASE_MODEL")
CHECKPOINT_DIR = Path(env_str("ECHOSTUDIO_CHECKPOINT_DIR") or VAR_DIR / "checkpoints")
# Training jobs save a resumable state every this many optimizer steps (and after every epoch), so
# an attempt that follows a dead worker continues from there (docs/training.md).
TRAINING_RESUME_EVERY_STEPS = env_int("ECHOSTUDIO_TRAINING_RESUME_EVERY_STEPS", 50, minimum=1)

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Session first: its lack of a WWW-Authenticate header keeps "not logged in" a 403, as the
    # API has always answered; a token is tried when there is no session.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "webapp.api.tokens.TokenAuthentication",
        # Last: reached only by a request neither authenticated, where it counts the address.
        "webapp.api.throttles.AddressAllowance",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "webapp.api.pagination.IdCursorPagination",
    "PAGE_SIZE": 100,
    "EXCEPTION_HANDLER": "webapp.api.errors.api_exception_handler",
    # Per signed-in user; per unauthenticated address and failed tokens per address, both checked
    # while authenticating, before any permission refuses the request (webapp.api.throttles).
    "DEFAULT_THROTTLE_CLASSES": ["webapp.api.throttles.UserThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "user": env_str("ECHOSTUDIO_API_USER_RATE", "1200/min"),
        "anon": env_str("ECHOSTUDIO_API_ADDRESS_RATE", "120/min"),
        "failed_token": env_str("ECHOSTUDIO_API_FAILED_TOKEN_RATE", "10/min"),
    },
}
# The proxies in front of the app (nginx: its address, e.g. 127.0.0.1): from them alone
# X-Forwarded-For is believed, so the login lockout and the API throttles count each client's own
# address (webapp.lib.client_address). Unset: REMOTE_ADDR, whatever the header says.
try:
    TRUSTED_PROXIES = trusted_networks(env_list("ECHOSTUDIO_TRUSTED_PROXIES", []))
except ValueError as exc:
    raise ImproperSetting(f"ECHOSTUDIO_TRUSTED_PROXIES: {exc}") from None
if env_int("ECHOSTUDIO_PROXY_COUNT", 0, minimum=0):
    raise ImproperSetting(
        "ECHOSTUDIO_PROXY_COUNT is replaced by ECHOSTUDIO_TRUSTED_PROXIES: name the proxies' addresses "
        "(nginx on this machine: 127.0.0.1,::1), from which alone X-Forwarded-For is believed"
    )

# The throttles' counts, shared by every web process: in Redis (INCR) when ECHOSTUDIO_CACHE_URL names
# one, else in small files under var/throttles, each updated under a file lock (webapp.api.throttles).
CACHE_URL = env_str("ECHOSTUDIO_CACHE_URL")
THROTTLE_COUNTS = "cache" if CACHE_URL else "files"
THROTTLE_DIR = VAR_DIR / "throttles"
# A Redis that is down or unreachable is a cache miss, never an error (webapp.cache): the short
# timeouts keep a request from waiting on it.
CACHES = {
    "default": {
        "BACKEND": "webapp.cache.FailOpenRedisCache",
        "LOCATION": CACHE_URL,
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
    }
    if CACHE_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}
SPECTACULAR_SETTINGS = {
    "TITLE": "EchoStudio API",
    "DESCRIPTION": "Record, review, annotate and evaluate EchoEval utterances.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI from this project's static files (drf-spectacular-sidecar): /api/docs/ works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # The ways in; AddressAllowance, last of the authentication classes, only counts (no scheme).
    "AUTHENTICATION_WHITELIST": [
        "rest_framework.authentication.SessionAuthentication",
        "webapp.api.tokens.TokenAuthentication",
    ],
    "ENUM_NAME_OVERRIDES": {"JobStatusEnum": "webapp.models.JobStatus"},
}


class _ForbiddenWithoutTraceback(logging.Filter):
    """Keep "Forbidden (Permission denied): /path" to its one line: a refused request is the access
    rules working, and the traceback Django attaches buried every real error in the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], PermissionDenied):
            record.exc_info = None
            record.exc_text = None
        return True


LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"forbidden_without_traceback": {"()": _ForbiddenWithoutTraceback}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    # On the logger, so Django's own DEBUG console handler prints the one line too.
    "loggers": {"django.request": {"filters": ["forbidden_without_traceback"]}},
    "root": {"handlers": ["console"], "level": env_str("DJANGO_LOG_LEVEL", "INFO")},
}

# HTTPS. Production defaults to secure cookies, redirecting http to https and a year of HSTS;
# each can be set. Behind a TLS-terminating proxy, DJANGO_SECURE_PROXY_SSL_HEADER names the
# header it sets (X-Forwarded-Proto=https) so Django knows the request came over https.
SESSION_COOKIE_SECURE = env_bool("DJANGO_SESSION_COOKIE_SECURE", PRODUCTION)
CSRF_COOKIE_SECURE = env_bool("DJANGO_CSRF_COOKIE_SECURE", PRODUCTION)
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", PRODUCTION)
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 31_536_000 if PRODUCTION else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", PRODUCTION)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", False)
SECURE_PROXY_SSL_HEADER = env_proxy_ssl_header("DJANGO_SECURE_PROXY_SSL_HEADER")
# /healthz answers plain http from a load balancer inside the network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]

# Content-Security-Policy (webapp.lib.csp): scripts only from our own static files, never inline or
# eval'd. Styles allow inline because wavesurfer draws its waveform in a shadow DOM styled by
# <style> elements it creates, and progress bars set their width in a style attribute.
CSP_MEDIA_ORIGINS = env_list("ECHOSTUDIO_CSP_MEDIA_ORIGINS", [])

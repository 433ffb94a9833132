"""Read settings from environment variables, failing loudly on values that make no sense.

A typo in production configuration should stop the process at start-up with a message naming
the variable, not surface hours later as a confusing runtime error.
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse


class ImproperSetting(Exception):
    """An environment variable holds a value the settings cannot use."""


def env_str(name: str, default: str = "") -> str:
    """Return the variable's value stripped of surrounding whitespace, or the default."""
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool) -> bool:
    """Return a boolean from 1/0, true/false, yes/no, on/off; anything else is an error."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperSetting(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    """Return an integer, refusing non-numbers and values below the minimum."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ImproperSetting(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperSetting(f"{name}={value} is below the minimum of {minimum}")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    """Return a float, refusing non-numbers and values below the minimum."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw.strip())
    except ValueError:
        raise ImproperSetting(f"{name}={raw!r} is not a number") from None
    if minimum is not None and value < minimum:
        raise ImproperSetting(f"{name}={value} is below the minimum of {minimum}")
    return value


# Django's security.W009: a key shorter than this, or with fewer distinct characters, or one made
# by startproject's insecure default, is too weak to sign sessions and audio links.
SECRET_KEY_MIN_LENGTH = 50
SECRET_KEY_MIN_UNIQUE_CHARACTERS = 5
INSECURE_KEY_PREFIX = "django-insecure-"
# W009 counts characters, so "password" * 7 passed; the estimate below counts what is not repeated.
# 128 bits is what a 22-character random base64 string carries; Django's own keys carry ~280.
SECRET_KEY_MIN_ENTROPY_BITS = 128
# A repeat of an earlier stretch this long or longer costs one character (the reference to it).
_REPEAT_MIN_LENGTH = 3
_CHARACTER_CLASSES = (
    (str.islower, 26),
    (str.isupper, 26),
    (str.isdigit, 10),
)
_OTHER_CHARACTERS = 33  # printable ASCII punctuation and space


def estimated_entropy_bits(key: str) -> float:
    """Return a conservative estimate of the bits of randomness in `key`.

    Each character that is new costs log2 of the alphabet its character classes span (lower case,
    upper case, digits, other); a character that continues a run (the same, or the next or previous
    code point) is free, and a repeat of an earlier stretch of 3 or more costs one character. So
    "password" * 7 is worth 8 characters of lower case (38 bits), a random token all of its own.
    """
    if not key:
        return 0.0
    pool = sum(size for test, size in _CHARACTER_CLASSES if any(test(character) for character in key))
    if any(not any(test(character) for test, _ in _CHARACTER_CLASSES) for character in key):
        pool += _OTHER_CHARACTERS
    novel = 0
    position = 0
    while position < len(key):
        repeat = _longest_earlier_match(key, position)
        if repeat >= _REPEAT_MIN_LENGTH:
            novel += 1
            position += repeat
            continue
        if position == 0 or abs(ord(key[position]) - ord(key[position - 1])) > 1:
            novel += 1
        position += 1
    return novel * math.log2(max(pool, 2))


def _longest_earlier_match(key: str, position: int) -> int:
    """Return the length of the longest stretch at `position` that also starts earlier (LZ77)."""
    best = 0
    for start in range(position):
        length = 0
        while position + length < len(key) and key[start + length] == key[position + length]:
            length += 1
        best = max(best, length)
    return best


def secret_key_problem(key: str) -> str | None:
    """Say why `key` is too weak for production (W009's rule, then its estimated entropy), or None
    when it is not."""
    if not key:
        return "is not set"
    if key.startswith(INSECURE_KEY_PREFIX):
        return f"starts with {INSECURE_KEY_PREFIX!r} (startproject's throwaway key)"
    if len(key) < SECRET_KEY_MIN_LENGTH:
        return f"has {len(key)} characters, fewer than {SECRET_KEY_MIN_LENGTH}"
    if len(set(key)) < SECRET_KEY_MIN_UNIQUE_CHARACTERS:
        return f"uses {len(set(key))} distinct characters, fewer than {SECRET_KEY_MIN_UNIQUE_CHARACTERS}"
    if (bits := estimated_entropy_bits(key)) < SECRET_KEY_MIN_ENTROPY_BITS:
        return (
            f"carries about {bits:.0f} bits of randomness (repeats and runs counted once), "
            f"fewer than {SECRET_KEY_MIN_ENTROPY_BITS}"
        )
    return None


def env_list(name: str, default: list[str]) -> list[str]:
    """Return a comma-separated list with blanks dropped."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [part.strip() for part in raw.split(",") if part.strip()]


def env_proxy_ssl_header(name: str) -> tuple[str, str] | None:
    """Return Django's SECURE_PROXY_SSL_HEADER from "X-Forwarded-Proto=https" (unset: None).

    The header is named as the proxy sends it; Django reads it from request.META, so it becomes
    HTTP_X_FORWARDED_PROTO. Set it only behind a proxy that overwrites the header from clients.
    """
    raw = env_str(name)
    if not raw:
        return None
    header, sep, value = raw.partition("=")
    header, value = header.strip(), value.strip()
    if not sep or not header or not value or any(c.isspace() for c in header):
        raise ImproperSetting(f"{name}={raw!r} is not HEADER=VALUE, e.g. X-Forwarded-Proto=https")
    meta_name = header.upper().replace("-", "_")
    if not meta_name.startswith("HTTP_"):
        meta_name = f"HTTP_{meta_name}"
    return meta_name, value


def stored_secret_key(path: Path) -> str:
    """Return the secret key kept in `path`, creating a random one (mode 0600) the first time.

    For a server run without DJANGO_SECRET_KEY outside production mode: the key is random, so
    nobody can forge signatures with a published one, and kept, so sessions and signed audio URLs
    outlive a restart. Two processes starting together agree on one key: the file is written
    whole beside the target and linked into place, which fails for the loser, who reads the
    winner's. A key file others may read is refused rather than trusted.
    """
    if not path.exists():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".secret_key.")  # mode 0600
        except OSError as exc:
            raise ImproperSetting(f"DJANGO_SECRET_KEY is not set and {path} cannot be made: {exc}") from None
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(50))
            os.link(temporary, path)
            logging.getLogger("webapp.settings").warning(
                "DJANGO_SECRET_KEY is not set: created a random secret key in %s (mode 0600). "
                "Set DJANGO_SECRET_KEY to share one key between machines.",
                path,
            )
        except FileExistsError:
            pass
        finally:
            os.unlink(temporary)
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise ImproperSetting(f"{path} holds the secret key but others may read it (chmod 600 {path})")
    key = path.read_text().strip()
    if len(key) < 50:
        raise ImproperSetting(f"{path} holds no usable secret key (delete it to make a new one)")
    return key


@dataclass(frozen=True)
class DatabaseUrl:
    engine: str
    name: str
    user: str
    password: str
    host: str
    port: str
    options: dict[str, str]


def parse_database_url(url: str, *, base_dir: Path) -> dict[str, object]:
    """Return a Django DATABASES entry for a postgres:// or sqlite:/// URL."""
    parsed = urlparse(url)
    scheme = parsed.scheme.lower()
    if scheme in {"postgres", "postgresql", "pgsql"}:
        name = unquote(parsed.path.lstrip("/"))
        if not name:
            raise ImproperSetting(f"DATABASE_URL {url!r} names no database")
        options = {key: values[-1] for key, values in parse_qs(parsed.query).items()}
        return {
            # Django's backend, its health check made without a round trip (webapp.postgresql.base).
            "ENGINE": "webapp.postgresql",
            "NAME": name,
            "USER": unquote(parsed.username or ""),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "",
            "PORT": str(parsed.port or ""),
            "OPTIONS": options,
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
        }
    if scheme == "sqlite":
        # sqlite:///relative.db and sqlite:////absolute.db, as dj-database-url reads them.
        path_text = unquote(parsed.path)
        path = Path(path_text[1:]) if path_text.startswith("//") else base_dir / path_text.lstrip("/")
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(path),
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
            "TEST": {"NAME": str(path.with_name(path.stem + "-test.sqlite3"))},
        }
    raise ImproperSetting(f"DATABASE_URL scheme {scheme!r} is not supported (use postgres:// or sqlite:///)")

"""Settings fail closed: no known secret key, no DEBUG in production, HTTPS settings, and
`check --deploy` clean under production settings (each start is a real process)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PRODUCTION_SECRET = "p" * 10 + "Kx81-zQ_4vLm7Tb2Nw9RyJs3Hd6Fg0Ua5Xc1Ve8Wo2Ik4Pl"
PRODUCTION = {
    "ECHOSTUDIO_PRODUCTION": "1",
    "DJANGO_SECRET_KEY": PRODUCTION_SECRET,
    "DJANGO_ALLOWED_HOSTS": "studio.example.org",
}
SHOW = (
    "import json, django; from django.conf import settings; django.setup(); print(json.dumps({"
    "'secret': settings.SECRET_KEY, 'debug': settings.DEBUG, 'hsts': settings.SECURE_HSTS_SECONDS,"
    "'redirect': settings.SECURE_SSL_REDIRECT, 'session_secure': settings.SESSION_COOKIE_SECURE,"
    "'csrf_secure': settings.CSRF_COOKIE_SECURE, 'proxy': settings.SECURE_PROXY_SSL_HEADER}))"
)


def start(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Load the settings in a fresh process with only the given EchoStudio/Django variables."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "ECHOSTUDIO_"))}
    clean |= {"DJANGO_SETTINGS_MODULE": "webapp.settings", "ECHOSTUDIO_VAR_DIR": str(tmp_path), **env}
    return subprocess.run(
        [sys.executable, "-c", SHOW], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120
    )


def shown(result: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert result.returncode == 0, result.stderr[-2000:]
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def test_without_a_key_a_random_one_is_made_once_and_kept_private(tmp_path: Path) -> None:
    first = start(tmp_path)
    key_file = tmp_path / "secret_key"
    assert "created a random secret key" in first.stderr
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    second = start(tmp_path)
    assert "created a random secret key" not in second.stderr
    assert shown(first)["secret"] == shown(second)["secret"] == key_file.read_text().strip()
    assert len(str(shown(first)["secret"])) >= 50
    assert "echostudio-development-key" not in key_file.read_text()


def test_a_key_file_others_may_read_is_refused(tmp_path: Path) -> None:
    shown(start(tmp_path))
    (tmp_path / "secret_key").chmod(0o644)
    result = start(tmp_path)
    assert result.returncode != 0
    assert "chmod 600" in result.stderr


@pytest.mark.parametrize("key", ["", "short-key"])
def test_production_refuses_a_missing_or_short_key(tmp_path: Path, key: str) -> None:
    result = start(tmp_path, **{**PRODUCTION, "DJANGO_SECRET_KEY": key})
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr
    assert not (tmp_path / "secret_key").exists()


def test_production_refuses_debug(tmp_path: Path) -> None:
    result = start(tmp_path, **PRODUCTION, DJANGO_DEBUG="1")
    assert result.returncode != 0
    assert "DJANGO_DEBUG=1 is refused with ECHOSTUDIO_PRODUCTION=1" in result.stderr


def test_production_defaults_to_https_everywhere(tmp_path: Path) -> None:
    values = shown(start(tmp_path, **PRODUCTION, DJANGO_SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto=https"))
    assert values["secret"] == PRODUCTION_SECRET
    assert values["debug"] is False
    assert values["hsts"] == 31_536_000
    assert values["redirect"] is True
    assert values["session_secure"] is True and values["csrf_secure"] is True
    assert values["proxy"] == ["HTTP_X_FORWARDED_PROTO", "https"]


def test_https_settings_can_be_set(tmp_path: Path) -> None:
    values = shown(
        start(tmp_path, **PRODUCTION, DJANGO_SECURE_HSTS_SECONDS="3600", DJANGO_SECURE_SSL_REDIRECT="0")
    )
    assert (values["hsts"], values["redirect"]) == (3600, False)


def test_check_deploy_is_clean_under_production_settings(tmp_path: Path) -> None:
    # The same command and environment as .ci/run (see `make check-deploy`).
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "ECHOSTUDIO_"))}
    env = clean | PRODUCTION | {"ECHOSTUDIO_VAR_DIR": str(tmp_path), "DJANGO_SECURE_HSTS_PRELOAD": "1"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "no issues" in result.stdout


def test_without_production_settings_check_deploy_warns(tmp_path: Path) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "ECHOSTUDIO_"))}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=clean | {"ECHOSTUDIO_VAR_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0
    assert "security.W004" in result.stderr  # no HSTS outside production mode


def test_an_unwritable_var_folder_stops_start_up_with_a_clear_message(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    result = start(blocked)  # the var "folder" is a file: the key cannot be made inside it
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY is not set and" in result.stderr

"""Settings helpers read environment variables and refuse values that make no sense."""

from __future__ import annotations

from pathlib import Path

import pytest

from webapp.env import ImproperSetting, env_bool, env_int, env_proxy_ssl_header, parse_database_url


def test_postgres_url_becomes_a_psycopg_database() -> None:
    db = parse_database_url(
        "postgres://ann:s%40cret@db.example:6543/echo?sslmode=require", base_dir=Path("/x")
    )
    assert db["ENGINE"] == "webapp.postgresql"  # Django's, with a cheaper health check
    assert (db["NAME"], db["USER"], db["PASSWORD"], db["HOST"], db["PORT"]) == (
        "echo",
        "ann",
        "s@cret",
        "db.example",
        "6543",
    )
    assert db["OPTIONS"] == {"sslmode": "require"}


def test_sqlite_urls_resolve_relative_and_absolute_paths() -> None:
    assert parse_database_url("sqlite:///var/db.sqlite3", base_dir=Path("/srv/app"))["NAME"] == (
        "/srv/app/var/db.sqlite3"
    )
    assert (
        parse_database_url("sqlite:////tmp/x.sqlite3", base_dir=Path("/srv/app"))["NAME"] == "/tmp/x.sqlite3"
    )


@pytest.mark.parametrize("url", ["mysql://u@h/db", "postgres://u@h/", "nonsense"])
def test_unsupported_database_urls_fail_loudly(url: str) -> None:
    with pytest.raises(ImproperSetting):
        parse_database_url(url, base_dir=Path("/x"))


def test_booleans_and_integers_refuse_garbage(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLAG", "maybe")
    with pytest.raises(ImproperSetting, match="FLAG"):
        env_bool("FLAG", False)
    monkeypatch.setenv("FLAG", "Yes")
    assert env_bool("FLAG", False) is True
    monkeypatch.setenv("COUNT", "ten")
    with pytest.raises(ImproperSetting, match="COUNT"):
        env_int("COUNT", 1)
    monkeypatch.setenv("COUNT", "-3")
    with pytest.raises(ImproperSetting, match="minimum"):
        env_int("COUNT", 1, minimum=0)


def test_the_proxy_header_is_named_as_the_proxy_sends_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROXY", raising=False)
    assert env_proxy_ssl_header("PROXY") is None
    monkeypatch.setenv("PROXY", "X-Forwarded-Proto=https")
    assert env_proxy_ssl_header("PROXY") == ("HTTP_X_FORWARDED_PROTO", "https")
    monkeypatch.setenv("PROXY", "HTTP_X_FORWARDED_PROTO = https")
    assert env_proxy_ssl_header("PROXY") == ("HTTP_X_FORWARDED_PROTO", "https")
    for bad in ("X-Forwarded-Proto", "=https", "X Forwarded=https"):
        monkeypatch.setenv("PROXY", bad)
        with pytest.raises(ImproperSetting, match="PROXY"):
            env_proxy_ssl_header("PROXY")

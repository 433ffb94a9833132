"""Production refuses a low-entropy secret key by Django's W009 rule (a pentest started production
with 50 x "a"; only `check --deploy` warned)."""

from __future__ import annotations

import secrets
import string
from pathlib import Path

import pytest

from tests.webapp.security.test_settings_fail_closed import PRODUCTION, PRODUCTION_SECRET, shown, start
from webapp.env import SECRET_KEY_MIN_ENTROPY_BITS, estimated_entropy_bits, secret_key_problem


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        ("", "not set"),
        ("a" * 50, "distinct characters"),
        ("abcd" * 20, "distinct characters"),
        ("django-insecure-" + "Kx81-zQ_4vLm7Tb2Nw9RyJs3Hd6Fg0Ua5Xc1Ve8Wo2Ik4Pl", "startproject"),
        ("Kx81-zQ_4vLm7Tb2Nw9", "fewer than 50"),
        ("password" * 7, "bits of randomness"),
        ("Password1!" * 5, "bits of randomness"),
        ("abcdefghijklmnopqrstuvwxyz" * 2, "bits of randomness"),
        ("0123456789" * 6, "bits of randomness"),
    ],
)
def test_weak_keys_are_named_with_their_weakness(key: str, reason: str) -> None:
    problem = secret_key_problem(key)
    assert problem is not None and reason in problem


def test_a_random_key_passes() -> None:
    assert secret_key_problem(PRODUCTION_SECRET) is None


@pytest.mark.parametrize(
    "key",
    [
        secrets.token_urlsafe(50),
        secrets.token_hex(32),
        "".join(secrets.choice(string.ascii_lowercase) for _ in range(50)),
    ],
)
def test_keys_made_by_the_usual_generators_pass(key: str) -> None:
    assert secret_key_problem(key) is None


def test_a_repeated_word_is_worth_one_copy_of_it() -> None:
    once = estimated_entropy_bits("password")
    assert once <= estimated_entropy_bits("password" * 7) <= once + 5
    assert estimated_entropy_bits("password" * 7) < SECRET_KEY_MIN_ENTROPY_BITS


def test_production_does_not_start_on_fifty_times_a(tmp_path: Path) -> None:
    result = start(tmp_path, **{**PRODUCTION, "DJANGO_SECRET_KEY": "a" * 50})
    assert result.returncode != 0
    assert "distinct characters" in result.stderr
    assert "a" * 50 not in result.stderr  # the refusal does not print the key
    assert shown(start(tmp_path, **PRODUCTION))["secret"] == PRODUCTION_SECRET

"""A judge endpoint saved through the judge form is an http(s) address with a host, or refused."""

from __future__ import annotations

import socket

import pytest

from evaluation.judging.forms import JudgeConfigForm


def _form(base_url: str) -> JudgeConfigForm:
    return JudgeConfigForm({"name": "lab", "base_url": base_url, "max_retries": 1, "temperature": 0})


@pytest.mark.parametrize("base_url", ["javascript:alert(1)", "ftp://files.example/v1", "file:///etc/passwd"])
def test_an_address_that_is_not_http_is_refused_in_words(db: None, base_url: str) -> None:
    form = _form(base_url)
    assert not form.is_valid()
    assert form.errors["base_url"]


def test_the_scheme_is_named_where_the_url_field_lets_one_through(db: None) -> None:
    form = _form("ftp://files.example/v1")
    assert not form.is_valid()
    assert "must start with http:// or https://" in form.errors["base_url"][0]


@pytest.mark.parametrize("base_url", ["https://api.openai.com/v1", "http://gpu-box.lab:8000/v1", ""])
def test_web_addresses_and_blank_are_accepted(db: None, base_url: str) -> None:
    assert _form(base_url).is_valid()


def _lab_network(host: str, port: int, *args: object, **kwargs: object) -> list:
    return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.7", port))]


def test_the_documented_gpu_box_example_is_saved_as_written(db: None, settings, monkeypatch) -> None:
    # docs/deployment.md: ECHOSTUDIO_OUTBOUND_ALLOWED_HOSTS=gpu-box,10.0.0.5 and
    # ECHOSTUDIO_OUTBOUND_KEY_HOSTS=...,ECHOSTUDIO_JUDGE_KEY_LAB=gpu-box:8000; the form's own help text.
    settings.OUTBOUND_ALLOWED_HOSTS = ["gpu-box", "10.0.0.5"]
    settings.OUTBOUND_KEY_HOSTS = {"ECHOSTUDIO_JUDGE_KEY_LAB": "gpu-box:8000"}
    monkeypatch.setattr(socket, "getaddrinfo", _lab_network)
    form = JudgeConfigForm(
        {
            "name": "lab",
            "base_url": "http://gpu-box:8000/v1",
            "api_key_env": "ECHOSTUDIO_JUDGE_KEY_LAB",
            "max_retries": 1,
            "temperature": 0,
        }
    )
    assert form.is_valid(), form.errors
    assert form.save().base_url == "http://gpu-box:8000/v1"


def test_a_bare_host_name_is_still_checked_against_the_policy(db: None, settings, monkeypatch) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []
    monkeypatch.setattr(socket, "getaddrinfo", _lab_network)
    form = _form("http://gpu-box:8000/v1")
    assert not form.is_valid()
    assert "internal address" in form.errors["base_url"][0]

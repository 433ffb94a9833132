"""Helpers for tests that drive real Chromium through Playwright."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.factories import TEST_PASSWORD


def log_in(page: Any, live_server: Any, username: str, *, start: str = "/accounts/login/") -> None:
    """Log in through the real login form, starting at `start` (a page that shows the form).

    Every user the test fixtures make has TEST_PASSWORD. Callers wait for the page they expect.
    """
    page.goto(f"{live_server.url}{start}")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", TEST_PASSWORD)
    page.click("button[type=submit]")


def press_and_settle(page: Any, *keys: str) -> None:
    """Press each key and return once the page has seen the keyup of the last one.

    Keydown handlers run synchronously before their key's keyup is dispatched, so after this a test
    may assert that a key did nothing without waiting out a timer.
    """
    page.evaluate(
        "() => { window.__keyupsSeen = 0; if (!window.__countingKeyups) { window.__countingKeyups = true;"
        " window.addEventListener('keyup', () => { window.__keyupsSeen += 1; }, true); } }"
    )
    for key in keys:
        page.keyboard.press(key)
    keyups = sum(key.count("+") + 1 for key in keys)  # "Alt+Equal" releases two keys
    page.wait_for_function(f"() => window.__keyupsSeen >= {keyups}")


def wait_for_layout(page: Any, script: str, settled: Callable[[Any], bool], timeout: float = 15.0) -> Any:
    """Measure the page with `script` until `settled` holds for the measurement; return it.

    For layout done a frame or a debounce timer after the change that asks for it (the word ruler,
    region labels), which the page announces with no event: the settled layout is the event.
    """
    deadline = time.monotonic() + timeout
    while True:
        measured = page.evaluate(script)
        if settled(measured):
            return measured
        if time.monotonic() > deadline:
            pytest.fail(f"the page's layout never settled: {measured}")
        page.wait_for_timeout(50)


def wait_for_keys(page: Any) -> None:
    """Wait until the page's keys are bound: a deferred script binds them and writes their hint list
    (EchoKeys.use), which may be after the elements a test waits for were parsed; a key pressed before
    it goes nowhere."""
    page.wait_for_selector("[data-shortcut-list] dt", state="attached")


def listed_keys(page: Any) -> list[str]:
    """Return the keys the page's hint list shows, having checked that they are its handler table's
    keys (EchoKeys.keys, static/js/shortcuts.js): the hints and the keys come from one table."""
    wait_for_keys(page)
    shown, handled = page.evaluate(
        """() => {
            const list = document.querySelector('[data-shortcut-list]');
            return [Array.from(list.querySelectorAll('dt kbd'), (kbd) => kbd.textContent), EchoKeys.keys(list)];
        }"""
    )
    assert shown == handled, (shown, handled)
    return list(shown)

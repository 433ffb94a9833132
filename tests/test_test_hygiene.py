"""The test sources keep the habits that stop tests colliding or flaking on timing
(tests/support/hygiene.py): files under tmp_path, every skip through skip_or_fail, no plain sleeps."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.support.hygiene import Finding, scan_source

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SCANNER = TESTS / "support" / "hygiene.py"  # it names what it looks for, so it is not scanned

# Sleeps where waiting out time is itself the behaviour under test (a lease running out, say), by
# (file, function), each with why. None today: every wait in the suite is an event or a poll.
ALLOWED_SLEEPS: dict[tuple[str, str], str] = {
    (
        "tests/browser/test_workbench_keeps_work.py",
        "test_an_offline_edit_restored_after_a_reload_is_no_conflict_but_a_second_tab_is",
    ): "a send that may or may not come (the replaced page's page-hide beacon): no event marks its absence",
}


def _findings() -> list[Finding]:
    found: list[Finding] = []
    for path in sorted(TESTS.rglob("*.py")):
        if path != SCANNER:
            found += scan_source(path.read_text(), str(path.relative_to(ROOT)))
    return found


def _allowed(finding: Finding) -> bool:
    return finding.rule == "plain sleep" and (finding.path, finding.function) in ALLOWED_SLEEPS


def test_the_test_sources_write_under_tmp_path_skip_through_skip_or_fail_and_do_not_sleep() -> None:
    broken = [finding for finding in _findings() if not _allowed(finding)]
    assert broken == [], "\n".join(str(finding) for finding in broken)


def test_every_allowed_sleep_is_still_there() -> None:
    # An allowance outliving its sleep would let a new sleep in the same test pass unseen.
    used = {(finding.path, finding.function) for finding in _findings() if _allowed(finding)}
    assert set(ALLOWED_SLEEPS) == used


def _rules(snippet: str) -> list[str]:
    return [finding.rule for finding in scan_source(textwrap.dedent(snippet))]


@pytest.mark.parametrize(
    "snippet",
    [
        'page.screenshot(path="/tmp/h17check-spot-check.png", full_page=True)',
        'SHOTS = Path("/tmp/shots-23")',
        'page.locator("section").screenshot(path="/tmp/shots-23/agreement.png")',
        'shot.replace(Path("/tmp") / f"h16study-{shot.name}")',
        'with open(f"/tmp/{name}.json", "w") as out: ...',
        'target = "/tmp/report.html"',
        'log = os.path.join(tempfile.gettempdir(), "worker.log")',
    ],
)
def test_a_fixed_place_in_the_temp_folder_is_found(snippet: str) -> None:
    assert "fixed temp path" in _rules(snippet)


@pytest.mark.parametrize(
    "snippet",
    [
        'page.screenshot(path=str(screenshots / "spot-check.png"), full_page=True)',
        '(tmp_path / "rows.jsonl").write_text("{}")',
        # a value stored or compared, never written
        'Checkpoint.objects.create(name="sft-1", uri="/tmp/sft-1")',
        'assert parse_database_url("sqlite:////tmp/x.sqlite3")["NAME"] == "/tmp/x.sqlite3"',
    ],
)
def test_paths_under_tmp_path_and_stored_values_pass(snippet: str) -> None:
    assert _rules(snippet) == []


@pytest.mark.parametrize(
    "snippet",
    [
        """
        def test_x():
            pytest.skip("no node")
        """,
        'pytestmark = pytest.mark.skipif(NODE is None, reason="Node.js")',
        """
        @pytest.mark.skip(reason="later")
        def test_x(): ...
        """,
        'playwright = pytest.importorskip("playwright")',
        """
        from pytest import skip
        skip("no redis")
        """,
    ],
)
def test_a_skip_that_bypasses_skip_or_fail_is_found(snippet: str) -> None:
    assert "bare skip" in _rules(snippet)


def test_the_skip_inside_skip_or_fail_passes() -> None:
    snippet = """
    def skip_or_fail(reason: str) -> None:
        if services_required():
            pytest.fail(reason)
        pytest.skip(reason)

    def test_x():
        skip_or_fail("no chromium")
    """
    assert _rules(snippet) == []


@pytest.mark.parametrize(
    "snippet",
    [
        """
        def test_x(job):
            time.sleep(2.0)
            assert job.status == "queued"
        """,
        """
        from time import sleep
        def test_x():
            sleep(0.5)
        """,
        """
        def test_x(page):
            page.keyboard.press("=")
            page.wait_for_timeout(300)
        """,
        # a loop around the definition is no poll inside it
        """
        while True:
            def helper():
                time.sleep(1)
        """,
    ],
)
def test_a_plain_sleep_is_found(snippet: str) -> None:
    assert "plain sleep" in _rules(snippet)


def test_a_sleep_inside_a_polling_loop_passes() -> None:
    snippet = """
    def wait_until(predicate, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.1)
    """
    assert _rules(snippet) == []

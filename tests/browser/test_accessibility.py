"""Real Chromium + axe-core (npm, `make install-dev`): each role's main pages hold no WCAG 2.1 A/AA
violation of any impact, on the demo data (items to record, review, label and adjudicate), and
reflow at 320 CSS px (WCAG 1.4.10: the page never scrolls sideways; wide data tables scroll inside
their own named, focusable region); the pages with waveforms hold none once the waveform is drawn,
its name, segment handles and players named."""

from __future__ import annotations

import io
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.recording.models import Item, Take
from evaluation.studies.models import Study
from evaluation.studies.workflows import record_turn_playback, submit_turn_rating
from tests.annotation.labelling.support import LabellingItemFactory, assign, submitted
from tests.conftest import skip_or_fail
from tests.evaluation.studies.dialogues.support import (
    build_dialogue_world,
    make_dialogue_study,
    show_long_ago,
)
from tests.evaluation.studies.support import build_world, current, make_study, play
from tests.factories import TEST_PASSWORD, ItemFactory, ReviewFactory, TakeFactory, speech_like_wav
from tests.support.browser import log_in
from webapp.models import User
from webapp.roles import Role

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("media_root")]

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]

# Per demo user: the pages they work on, and a pattern of a link on them to one piece of work.
PAGES: dict[str, tuple[list[str], str | None]] = {
    "actor": (["/studio/", "/consent/"], r"^/studio/items/[^/]+/$"),
    "reviewer1": (["/review/"], r"^/review/[0-9a-f-]{36}/$"),
    "annotator1": (["/annotate/"], r"^/annotate/\d+/$"),
    "lead": (["/adjudicate/", "/agreement/", "/gold/"], r"^/adjudicate/\d+/$"),
    "evaluator1": (["/rate/", "/rate/rubric/"], r"^/rate/rubric/\d+/[0-9a-f-]{36}/$"),
    "admin": (
        [
            "/manage/",
            "/manage/recording/",
            "/manage/systems/",
            "/manage/judges/",
            "/manage/judge-runs/",
            "/results/leaderboard/",
            "/results/agreement/",
            "/results/error-propagation/",
            "/echomind/",
            "/echomind/leaderboard/",
            "/manage/studies/",
            "/manage/studies/new/",
            "/manage/builds/",
            "/manage/builds/new/",
            "/manage/jobs/",
            "/manage/consent/",
            "/dialogues/",
            "/accounts/tokens/",
            "/docs/",
            "/docs/user-guide/",
        ],
        r"^/takes/[0-9a-f-]{36}/$",
    ),
}


REFLOW_WIDTH = 320  # CSS px: WCAG 1.4.10's 1280 px at 400% zoom
LONG_TEXT = (
    "I kept telling myself it was only a job, but I had been there eleven years, I knew everyone's "
    "children by name, and on the last day nobody even walked me to the door."
)


def _violations(page: Any) -> list[str]:
    """Return axe-core's WCAG 2.1 A/AA violations on the page (every impact), one line each."""
    page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        """async (tags) => {
            const result = await axe.run(document, {runOnly: {type: "tag", values: tags}});
            return result.violations.map((v) => `${v.impact} ${v.id}: ${v.nodes.length} node(s), e.g. ${v.nodes[0].target.join(" ")}`);
        }""",
        WCAG_21_AA,
    )
    return list(found)


def _wait_for_waveforms(page: Any) -> None:
    """Wait until every waveform shown on the page is drawn (static/js/waveform.js sets data-ready);
    the recorder's stays hidden until a take is picked."""
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('.waveform'))"
        ".every((w) => w.offsetParent === null || w.dataset.ready === 'true')"
    )


def _sideways(page: Any) -> str | None:
    """At REFLOW_WIDTH, None when the page does not scroll sideways, else how wide it is and where
    the overflow starts (a table inside a .scroll-x region scrolls there instead)."""
    viewport = page.viewport_size
    page.set_viewport_size({"width": REFLOW_WIDTH, "height": 800})
    try:
        return page.evaluate(
            """(width) => {
                const total = document.documentElement.scrollWidth;
                if (total <= width) return null;
                // Where the overflow starts: elements past the edge whose parent is not.
                const name = (node) => node.tagName.toLowerCase() + (node.id ? '#' + node.id : '')
                    + (typeof node.className === 'string' && node.className ? '.' + node.className.trim().split(/ +/).join('.') : '');
                const starts = [];
                for (const node of document.body.querySelectorAll('*')) {
                    if (node.closest('.scroll-x') || !node.parentElement) continue;
                    const box = node.getBoundingClientRect();
                    if (box.right <= width + 0.5 || box.width === 0) continue;
                    if (node.parentElement.getBoundingClientRect().right > width + 0.5) continue;
                    starts.push(`${name(node)} ${Math.round(box.width)} px`);
                }
                return `${total} px wide at ${width} px: ${starts.slice(0, 4).join(', ')}`;
            }""",
            REFLOW_WIDTH,
        )
    finally:
        page.set_viewport_size(viewport)


def _first_work_link(page: Any, pattern: str) -> str | None:
    hrefs = page.eval_on_selector_all("a[href]", "links => links.map((a) => a.getAttribute('href'))")
    return next((href for href in hrefs if re.match(pattern, href)), None)


def test_each_roles_main_pages_pass_axe_and_reflow_at_320_px(browser_page: Any, live_server: Any) -> None:
    if not AXE.exists():
        skip_or_fail("axe-core is not installed (make install-dev runs npm ci)")
    call_command("seed_demo", stdout=io.StringIO())
    for user in User.objects.filter(username__in=PAGES):
        user.set_password(TEST_PASSWORD)
        user.save(update_fields=["password"])
    page = browser_page
    problems: list[str] = []
    visited: list[str] = []
    for username, (paths, work_pattern) in PAGES.items():
        log_in(page, live_server, username)
        page.wait_for_load_state("load")
        urls = list(paths)
        for path in paths:
            page.goto(f"{live_server.url}{path}")
            if work_pattern and (link := _first_work_link(page, work_pattern)) and link not in urls:
                urls.append(link)
        for url in urls:
            response = page.goto(f"{live_server.url}{url}")
            assert response is not None and response.status == 200, (username, url)
            page.wait_for_load_state("load")
            _wait_for_waveforms(page)
            visited.append(f"{username} {url}")
            problems += [f"{username} {url}: {line}" for line in _violations(page)]
            if sideways := _sideways(page):
                problems.append(f"{username} {url}: reflow: {sideways}")
        page.context.clear_cookies()
    assert len(visited) >= 28, visited
    assert problems == [], "\n".join(problems)


SEGMENTS = [
    {"start": 0.0, "end": 0.6, "emotion": "happy", "words": "Oh great"},
    {"start": 0.6, "end": 1.5, "emotion": "sad", "words": "another Monday"},
]


def test_pages_with_waveforms_pass_axe_once_drawn(
    browser_page: Any, live_server: Any, transactional_db: None, users: dict[str, User], make_user: Any
) -> None:
    if not AXE.exists():
        skip_or_fail("axe-core is not installed (make install-dev runs npm ci)")
    page = browser_page
    shifting = LabellingItemFactory.create(scenario="emotion-shift")
    (labelling,) = assign(shifting, users["annotator"])
    labelling.perception = {**labelling.perception, "emotion_segments": SEGMENTS}
    labelling.save(update_fields=["perception"])
    adjudicated = LabellingItemFactory.create()
    for annotation in assign(adjudicated, users["annotator"], make_user(Role.ANNOTATOR, "ana")):
        submitted(annotation)
    to_review = ItemFactory.create(actor=users["actor"], state=Item.State.IN_REVIEW)
    take = TakeFactory.create(
        item=to_review, actor=users["actor"], status=Take.Status.IN_REVIEW, duration_seconds=1.5
    )
    review = ReviewFactory.create(take=take, reviewer=users["reviewer"])
    to_record = ItemFactory.create(actor=users["actor"])
    assert shifting.recording is not None

    pages = [
        ("annotator", f"/annotate/{labelling.pk}/", "the recording"),
        ("lead", f"/adjudicate/{adjudicated.pk}/", "the recording"),
        ("reviewer", f"/review/{review.public_id}/", "the take under review"),
        ("admin", f"/takes/{shifting.recording.public_id}/", "this take"),
        ("actor", f"/studio/items/{to_record.external_id}/", "the new take"),
    ]
    problems: list[str] = []
    for username, path, subject in pages:
        log_in(page, live_server, username, start=f"/accounts/login/?next={path}")
        page.wait_for_url(f"{live_server.url}{path}")
        if username == "actor":  # the recorder draws the take the actor is about to send
            wav = {"name": "take.wav", "mimeType": "audio/wav", "buffer": speech_like_wav()}
            page.set_input_files("#audio-file", files=[wav])
        _wait_for_waveforms(page)
        # Named for what it plays and how long, focusable; every player on the page named too.
        waveform = page.get_by_role("application", name=re.compile(rf"^Waveform of {subject}, \d+\.\d s$"))
        assert waveform.count() == 1, (path, page.locator(".waveform").first.get_attribute("aria-label"))
        assert waveform.get_attribute("tabindex") == "0"
        players = page.locator("audio")  # Playwright's locators reach into wavesurfer's shadow root
        assert players.count() >= 1
        assert all(players.nth(i).get_attribute("aria-label") for i in range(players.count())), path
        if username == "annotator":
            for number in (1, 2):
                for edge in ("Start", "End"):
                    assert page.get_by_role("slider", name=f"{edge} of segment {number}").count() == 1
            assert page.get_by_role("group", name="Segment 2, sad, 0.60 s to 1.50 s").count() == 1
        problems += [f"{username} {path}: {line}" for line in _violations(page)]
        if sideways := _sideways(page):
            problems.append(f"{username} {path}: reflow: {sideways}")
        page.context.clear_cookies()
    assert problems == [], "\n".join(problems)


def test_rating_pages_pass_axe_and_reflow_at_320_px(
    browser_page: Any, live_server: Any, users: dict[str, User], make_user: Any, screenshots: Path
) -> None:
    """The listening-study rating pages, a sample's and a conversation's, locked and open (the demo
    has no study): no axe violation, no sideways scrolling at 320 px; a screenshot of the
    conversation at 1,400 and 320 px in each state."""
    if not AXE.exists():
        skip_or_fail("axe-core is not installed (make install-dev runs npm ci)")
    page = browser_page
    rater = users["evaluator"]
    sample_study = make_study(build_world(make_user, n_systems=1, n_items=2), [rater], users["admin"])
    dialogue_world = build_dialogue_world(
        make_user, n_systems=1, n_dialogues=1, turns=3, system_prefix="Voice"
    )
    Item.objects.filter(dialogue=dialogue_world.dialogues[0], turn=2).update(text=LONG_TEXT)
    dialogue_study = make_dialogue_study(dialogue_world, [rater], users["admin"], items_per_system=1)
    log_in(page, live_server, "evaluator")
    page.wait_for_load_state("load")

    def rate(study: Study) -> str:
        return f"{live_server.url}{reverse('evaluation:rate_study', args=[study.public_id])}"

    problems: list[str] = []

    def check(url: str, state: str, shot: str = "") -> None:
        response = page.goto(url)
        assert response is not None and response.status == 200, (state, url)
        page.wait_for_load_state("load")
        page.wait_for_selector("[data-shortcut-list] dt", state="attached")
        problems.extend(f"{state}: {line}" for line in _violations(page))
        if sideways := _sideways(page):
            problems.append(f"{state}: reflow: {sideways}")
        if shot:
            for width in (1400, REFLOW_WIDTH):
                page.set_viewport_size({"width": width, "height": 900})
                page.screenshot(path=str(screenshots / f"{shot}-{width}.png"), full_page=True)

    check(rate(sample_study), "sample, locked")
    play(current(sample_study, rater))
    check(rate(sample_study), "sample, open")
    check(rate(dialogue_study), "conversation, first visit, locked", "dialogue-locked")
    assignment = current(dialogue_study, rater)
    played = show_long_ago(assignment)
    for turn in (1, 2):
        played += timedelta(seconds=30)
        record_turn_playback(assignment, turn, now=played)
    submit_turn_rating(assignment.pk, 1, dict.fromkeys(dialogue_study.dimensions, 4))
    check(rate(dialogue_study), "conversation, turn 1 saved, turn 2 open", "dialogue-turn-2-open")
    assert problems == [], "\n".join(problems)

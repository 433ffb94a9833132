"""The analysis job: QC and features stored on the take, levels against the speaker, then three reviewers."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from annotation.audio.peaks import block_peaks
from annotation.audio.suggestions import contours_for_waveform
from annotation.audio.synthesis import synthesize, to_wav_bytes
from annotation.recording.models import Item, Review, Take
from annotation.recording.takes import QC_FIELDS, analyze_take, levels_against, page_peaks, wav_samples
from tests.annotation.recording.support import analysed, record, upload
from tests.factories import ItemFactory
from webapp.jobs import JobReporter
from webapp.models import Job, JobStatus, User
from webapp.roles import Role, grant_role
from webapp.storage import read_media


def earlier_take(actor: User, item: Item, median_f0_hz: float, lufs: float, rate: float) -> Take:
    return Take.objects.create(
        item=item,
        actor=actor,
        status=Take.Status.REJECTED,
        audio_key="audio/take/x.wav",
        original_key="audio/original/x.wav",
        qc={"integrated_loudness_lufs": lufs, "duration_seconds": 2.0},
        features={"median_f0_hz": median_f0_hz, "phones_per_second": rate},
    )


def test_the_job_stores_qc_features_and_contours_and_sends_the_take_to_review(
    users: dict[str, User], review_panel: list[User], take_wav: bytes
) -> None:
    item = ItemFactory.create(actor=users["actor"])

    take = record(users["actor"], item, take_wav)

    assert take.analysis_job is not None and take.analysis_job.status == JobStatus.SUCCEEDED
    assert set(take.qc) == {*QC_FIELDS, "speech"} and not set(QC_FIELDS) & set(take.features)
    assert take.qc["peak_dbfs"] == pytest.approx(20 * math.log10(0.3), abs=0.1)  # the tone peaks at 0.3
    assert "phones_per_second" in take.features  # a tone says no words: the aligner may place none
    assert take.features["pitch_level"] is None and take.features["levels_compared_with"] == 0
    assert len(take.contours["pitch"]["hz"]) == len(take.contours["pitch"]["times"]) > 50
    # The waveform's tracks are stored with the analysis, as the pages would have built them.
    assert take.waveform == contours_for_waveform(take.contours) and take.waveform["pitch"]
    assert take.status == Take.Status.IN_REVIEW
    assert take.reviews.count() == 3


def test_levels_compare_the_take_with_the_speakers_other_takes(
    users: dict[str, User], review_panel: list[User]
) -> None:
    item = ItemFactory.create(actor=users["actor"])
    for f0, lufs, rate in ((100.0, -30.0, 6.0), (105.0, -31.0, 7.0), (110.0, -29.0, 8.0)):
        earlier_take(users["actor"], item, f0, lufs, rate)
    reading = synthesize(item.text, rate_wpm=220, pitch=70, voice="en-us+f3")

    take = record(users["actor"], item, to_wav_bytes(reading.samples, reading.sample_rate))

    # A raised female eSpeak voice at 220 words a minute, loud: far above 110 Hz and -29 LUFS, and
    # its articulation rate (the aligner's phones per second of speech) far above 8.
    assert take.features["phones_per_second"] > 12
    assert (take.features["pitch_level"], take.features["energy_level"], take.features["rate_level"]) == (
        "high",
        "high",
        "high",
    )
    assert take.features["levels_compared_with"] == 3


def test_levels_need_three_other_takes_with_the_measure() -> None:
    measured = {"median_f0_hz": 200.0, "integrated_loudness_lufs": -20.0, "phones_per_second": 12.0}
    others: list[dict[str, float | None]] = [
        {"median_f0_hz": 100.0, "integrated_loudness_lufs": None},
        {"median_f0_hz": 110.0},
        {},
    ]
    assert levels_against(measured, others) == {
        "pitch_level": None,
        "energy_level": None,
        "rate_level": None,
        "levels_compared_with": 3,
    }


def test_the_actor_never_reviews_their_own_take_and_work_is_spread(
    users: dict[str, User], review_panel: list[User], take_wav: bytes
) -> None:
    grant_role(users["actor"], Role.REVIEWER)  # an actor who also reviews
    takes = [
        record(users["actor"], ItemFactory.create(external_id=f"EE-{n}", actor=users["actor"]), take_wav)
        for n in range(5)
    ]

    assigned = Counter(Review.objects.values_list("reviewer__username", flat=True))

    assert "actor" not in assigned
    assert sum(assigned.values()) == 15
    assert set(assigned.values()) == {3}, assigned  # 5 reviewers, 15 reviews
    assert all(take.reviews.count() == 3 for take in takes)


def test_running_the_analysis_again_changes_nothing(
    users: dict[str, User], review_panel: list[User], take_wav: bytes
) -> None:
    take = record(users["actor"], ItemFactory.create(actor=users["actor"]), take_wav)
    job = Job.objects.create(kind="analyze_take", parameters={"take": take.pk})

    result = analyze_take(take.pk, JobReporter(job))

    assert result == {"take": take.pk, "skipped": "the take is already analysed"}
    assert take.reviews.count() == 3


def test_a_take_superseded_while_analysed_keeps_its_features_but_gets_no_reviewers(
    users: dict[str, User], review_panel: list[User], take_wav: bytes, client_for
) -> None:
    item = ItemFactory.create(actor=users["actor"])
    take = Take.objects.get(public_id=upload(client_for("actor"), item, take_wav).json()["id"])
    Take.objects.filter(pk=take.pk).update(status=Take.Status.SUPERSEDED)

    take = analysed(take)

    assert take.status == Take.Status.SUPERSEDED
    assert take.features["intonation"] == "rising"
    assert take.reviews.count() == 0


def test_with_too_few_reviewers_the_take_waits_for_an_admin(users: dict[str, User], take_wav: bytes) -> None:
    take = record(
        users["actor"], ItemFactory.create(actor=users["actor"]), take_wav
    )  # only users["reviewer"] exists
    assert take.status == Take.Status.IN_REVIEW
    assert list(take.reviews.values_list("reviewer__username", flat=True)) == ["reviewer"]


def test_a_take_analysed_before_the_tracks_were_stored_gets_them_on_first_read(
    users: dict[str, User],
) -> None:
    contours = {
        "pitch": {"times": [0.0, 0.01], "hz": [200.123, 201.0]},
        "intensity": {"times": [0.0], "db": [60.0]},
    }
    take = earlier_take(users["actor"], ItemFactory.create(actor=users["actor"]), 100.0, -30.0, 2.0)
    Take.objects.filter(pk=take.pk).update(contours=contours, waveform=None)
    take.refresh_from_db()

    tracks = take.waveform_tracks()

    assert tracks == {"pitch": [[0.0, 200.12], [0.01, 201.0]], "energy": [[0.0, 60.0]]}
    assert Take.objects.get(pk=take.pk).waveform == tracks


def test_the_job_stores_waveform_peaks_made_from_the_takes_audio(
    users: dict[str, User], review_panel: list[User], take_wav: bytes
) -> None:
    take = record(users["actor"], ItemFactory.create(actor=users["actor"]), take_wav)

    samples, sample_rate = wav_samples(read_media(take.audio_key))
    assert take.peaks is not None and take.peaks["length"] == len(samples) and sample_rate == 16_000
    assert take.peaks["levels"]["256"] == block_peaks(samples, 256)
    assert set(take.peaks["levels"]) == {"256", "2048", "16384"}


def test_a_take_analysed_before_peaks_were_made_gets_them_on_its_first_page(
    users: dict[str, User], review_panel: list[User], take_wav: bytes
) -> None:
    take = record(users["actor"], ItemFactory.create(actor=users["actor"]), take_wav)
    Take.objects.filter(pk=take.pk).update(peaks=None)
    take.refresh_from_db()

    page = page_peaks(take)

    assert page is not None and page["samples_per_pixel"] == 256 and page["duration"] == pytest.approx(1.2)
    assert Take.objects.get(pk=take.pk).peaks is not None


def test_a_take_whose_audio_is_gone_has_no_peaks_and_no_error(users: dict[str, User]) -> None:
    take = earlier_take(users["actor"], ItemFactory.create(actor=users["actor"]), 100.0, -30.0, 2.0)

    assert page_peaks(take) is None
    assert Take.objects.get(pk=take.pk).peaks is None

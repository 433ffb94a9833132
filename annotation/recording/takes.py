"""Workflows on takes: accept an actor's upload, analyse it, and send it to review.

An upload is checked and normalised completely before anything is stored, so a refused upload
leaves neither a row nor a file. An accepted one is stored twice under random keys (the 16 kHz
WAV everything plays and analyses, and the untouched original), and a job on the `default`
queue measures it and then hands it to three reviewers.
"""

from __future__ import annotations

import io
import math
import wave
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet

from annotation.audio.acoustics import analyze, as_float_samples, scalar_features
from annotation.audio.peaks import peaks_for_page, waveform_peaks
from annotation.audio.prosody import (
    MIN_TAKES_FOR_LEVELS,
    Level,
    contours_for_display,
    display_points,
    relative_levels,
)
from annotation.audio.speech.rate import RATE_KEY, measure_articulation_rate
from annotation.audio.speech.speaker import COHORT_SPEAKERS, COHORT_TAKES, REFERENCE_TAKES
from annotation.audio.speech.take_check import review_flags
from annotation.audio.suggestions import (
    contours_for_waveform,
    is_windowed,
    take_window,
    word_timing,
    word_timing_summary,
)
from annotation.audio.upload import UploadLimits, normalise_upload
from annotation.audio.voice_drafts import voice_drafts
from annotation.recording.access import may_record
from annotation.recording.consent.models import ConsentRecord
from annotation.recording.models import Item, Take
from annotation.recording.reviews import assign_reviewers
from webapp import audit
from webapp.jobs import JobReporter, start_job
from webapp.models import Job, JobStatus, User
from webapp.storage import delete_media, new_media_key, read_media, save_media

ANALYSIS_JOB_KIND = "analyze_take"
# An item takes new recordings until one is accepted: while the actor records it, and while
# earlier takes wait for review (the first accepted take supersedes the rest).
RECORDABLE_STATES = (Item.State.RECORDING, Item.State.IN_REVIEW)
# An analysis may be queued again only when its job ended without measuring the take.
RESTARTABLE_JOB_STATUSES = (JobStatus.FAILED, JobStatus.CANCELLED)
QC_FIELDS = (
    "duration_seconds",
    "peak_dbfs",
    "rms_dbfs",
    "clipping_ratio",
    "silence_ratio",
    "integrated_loudness_lufs",
)


class AnalysisNotRestartable(Exception):
    """The take's analysis is queued, running or done; the message is for the admin who asked."""


class TakeNotAllowed(Exception):
    """The item does not take a recording from this actor now; `reason` is for the actor."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


NO_CONSENT = "Give your consent on your consent page before you record: no take is made without it."


def upload_limits() -> UploadLimits:
    """Return the upload limits, with the size limit from settings (UPLOAD_MAX_BYTES)."""
    max_bytes = int(settings.UPLOAD_MAX_BYTES)
    return UploadLimits(max_bytes=max_bytes)


def earlier_turns_unrecorded(item: Item) -> list[int]:
    """Return the turns before a dialogue turn that have no take standing (none, or all rejected).

    A turn is performed in context, after the ones before it: until each earlier turn has a take
    that is not rejected, there is no conversation so far to perform it in.
    """
    standing = Take.objects.filter(item=OuterRef("pk")).exclude(status=Take.Status.REJECTED)
    unrecorded = Item.objects.earlier_turns(item).exclude(Exists(standing))
    return [turn for turn in unrecorded.values_list("turn", flat=True) if turn is not None]


def recordable_refusal(item: Item, actor: User) -> str | None:
    """Return why the actor may not record the item now (for the actor to read), or None when they may.

    The one rule for "may this script (or dialogue turn) be recorded now": the upload API, the
    recorder page and `record_take` (under the item lock) all ask it.
    """
    if not may_record(item, actor):
        return "This script is not assigned to you."
    if ConsentRecord.objects.in_force_for(actor.pk) is None:
        return NO_CONSENT
    if item.state not in RECORDABLE_STATES:
        if item.state == Item.State.SCRIPTED:
            return "This script is not open for recording yet."
        return "This script already has an accepted recording."
    missing = earlier_turns_unrecorded(item)
    if missing:
        turns = ", ".join(str(turn) for turn in missing)
        return (
            f"Record turn{'s' if len(missing) > 1 else ''} {turns} of this dialogue first: "
            f"turn {item.turn} is performed after the turns before it (a rejected take does not count)."
        )
    return None


def check_recordable(item: Item, actor: User) -> None:
    """Raise TakeNotAllowed unless the actor may record the item now (see `recordable_refusal`)."""
    refusal = recordable_refusal(item, actor)
    if refusal is not None:
        raise TakeNotAllowed(refusal)


def record_take(item: Item, actor: User, data: bytes, filename: str) -> Take:
    """Store an accepted upload as a new take and queue its analysis; raise AudioRejected or TakeNotAllowed.

    `filename` only appears in messages to the actor; it is not stored.
    """
    check_recordable(item, actor)
    audio = normalise_upload(data, filename, limits=upload_limits())
    audio_key = save_media(new_media_key("take", "wav"), audio.wav_bytes)
    original_key = save_media(new_media_key("original", audio.original_extension), audio.original_bytes)
    try:
        with transaction.atomic():
            # Locked: an accepted verdict or a reassignment on this item waits for us, or we for it.
            locked = Item.objects.lock(item.pk)
            check_recordable(locked, actor)
            take = Take.objects.create(
                item=locked,
                actor=actor,
                consent=ConsentRecord.objects.in_force_for(actor.pk),
                status=Take.Status.ANALYSING,
                audio_key=audio_key,
                original_key=original_key,
                original_format=audio.original_format,
                duration_seconds=audio.duration_seconds,
            )
            audit.record(
                actor=actor, action=audit.TAKE_STATUS, obj=take, after=audit.fields_of(take, "status")
            )
            take.analysis_job = start_job(ANALYSIS_JOB_KIND, started_by=actor, parameters={"take": take.pk})
            take.save(update_fields=["analysis_job"])
            if locked.state != Item.State.IN_REVIEW:
                locked.state = Item.State.IN_REVIEW
                locked.save(update_fields=["state", "updated_at"])
    except BaseException:
        # Django runs on_commit hooks (the job's enqueue) after committing, so an error may come
        # from there with the take already saved: its files then stay with it.
        if not Take.objects.filter(audio_key=audio_key).exists():
            delete_media(audio_key, original_key)
        raise
    return take


def analysis_restartable(take: Take) -> bool:
    """Return True when the take still waits for an analysis whose job failed, was cancelled or is missing."""
    job = take.analysis_job
    return take.status == Take.Status.ANALYSING and (job is None or job.status in RESTARTABLE_JOB_STATUSES)


def restart_analysis(take: Take, started_by: User) -> Job:
    """Queue the analysis of a take again (after a failed run); it reaches review when it succeeds.

    Raise AnalysisNotRestartable when the take no longer needs it (see `analysis_restartable`).
    """
    with transaction.atomic():
        # The race: two admins press "Run the analysis again" on the same failed take at once.
        # Unlocked, both would see the failed job and queue one analysis job each. With the take
        # row locked the second waits, then sees the first one's new job queued and is refused.
        locked = Take.objects.select_for_update().get(pk=take.pk)
        if locked.status != Take.Status.ANALYSING:
            raise AnalysisNotRestartable("Only a take still waiting for its analysis can be analysed again.")
        if not analysis_restartable(locked):
            raise AnalysisNotRestartable("This take's analysis is already queued or running.")
        job = start_job(ANALYSIS_JOB_KIND, started_by=started_by, parameters={"take": take.pk})
        locked.analysis_job = job
        locked.save(update_fields=["analysis_job"])
    return job


def analyze_take(take_id: int, reporter: JobReporter) -> dict[str, Any]:
    """Measure a take (QC and acoustic features), then send it to review; safe to run twice."""
    take = Take.objects.select_related("item").filter(pk=take_id).first()
    if take is None:
        return {"take": take_id, "skipped": "the take no longer exists"}
    if take.qc:
        return {"take": take_id, "skipped": "the take is already analysed"}

    reporter.progress(0.1, "Reading the audio", force=True)
    samples, sample_rate = wav_samples(read_media(take.audio_key))
    peaks = waveform_peaks(samples, sample_rate)
    reporter.progress(0.3, "Measuring pitch, intensity, loudness and rate")
    analysis = analyze(samples, sample_rate)
    measured = {
        **scalar_features(analysis),
        RATE_KEY: measure_articulation_rate(as_float_samples(samples), sample_rate, take.item.text),
    }
    others = [
        {**qc, **features}
        for qc, features in Take.objects.filter(actor_id=take.actor_id)
        .exclude(pk=take.pk)
        .values_list("qc", "features")
        if qc
    ]
    features = {
        **{name: value for name, value in measured.items() if name not in QC_FIELDS},
        **levels_against(measured, others),
        **voice_drafts(measured, others),
    }
    speech = None
    if settings.SPEECH_CHECKS:
        reporter.progress(0.5, "Checking the script, silences, quality and voice")
        speech = speech_check(take, samples, sample_rate)
    reporter.progress(0.8, "Assigning reviewers")

    with transaction.atomic():
        # Same lock order as every verdict: item, then take.
        Item.objects.lock(take.item_id)
        locked = Take.objects.select_for_update().get(pk=take.pk)
        locked.qc = {name: measured[name] for name in QC_FIELDS}
        fields = ["qc", "features", "contours", "waveform", "peaks"]
        if speech is not None:
            locked.qc["speech"] = speech
            # Flagged, never rejected: the take goes to its reviewers like any other.
            locked.flagged_for_review = bool(review_flags(speech))
            fields.append("flagged_for_review")
        locked.features = features
        locked.contours = dict(contours_for_display(analysis, display_points(len(samples) / sample_rate)))
        locked.waveform = contours_for_waveform(locked.contours)
        locked.peaks = peaks
        reviewers: list[int] = []
        # A take superseded while it was analysed keeps its measurements but needs no reviewers.
        analysed = locked.status == Take.Status.ANALYSING
        if analysed:
            locked.status = Take.Status.IN_REVIEW
            fields.append("status")
            reviewers = [review.reviewer_id for review in assign_reviewers(locked)]
        locked.save(update_fields=fields)
        if analysed:
            audit.record(
                actor=None,
                action=audit.TAKE_STATUS,
                obj=locked,
                before={"status": Take.Status.ANALYSING},
                after=audit.fields_of(locked, "status"),
            )
    return {
        "take": take_id,
        "status": locked.status,
        "reviewers": len(reviewers),
        "intonation": analysis.intonation,
    }


def speech_check(take: Take, samples: npt.NDArray[np.int16], sample_rate: int) -> dict[str, Any]:
    """Return the speech models' check of a take (`annotation.audio.speech.take_check`).

    The speaker is compared with the same actor's accepted takes: their cleanest few as heard in
    this take's room (`speaker.check_speaker`). Imported here, in the job, so the web process
    never loads the models."""
    from annotation.audio.speech.alignment import ScriptLimits
    from annotation.audio.speech.take_check import Thresholds, check_take

    if sample_rate != 16_000:
        raise ValueError("takes are stored at 16 kHz")
    accepted = Take.objects.filter(actor_id=take.actor_id, status=Take.Status.ACCEPTED).exclude(pk=take.pk)
    embeddings = _speaker_embeddings(accepted)
    references = _speaker_references(accepted)
    cohort = _cohort_references(take)
    dialogue_embeddings: list[Any] = []
    if take.item.dialogue_id is not None:
        other_turns = Take.objects.filter(
            item__dialogue_id=take.item.dialogue_id,
            status__in=(Take.Status.ACCEPTED, Take.Status.IN_REVIEW),
        ).exclude(item_id=take.item_id)
        dialogue_embeddings = _speaker_embeddings(other_turns)
    thresholds = Thresholds(
        doubtful_word_ratio=settings.SPEECH_CHECK_DOUBTFUL_WORD_RATIO,
        doubtful_speaker_similarity=settings.SPEECH_CHECK_DOUBTFUL_SPEAKER,
        min_p808=settings.SPEECH_CHECK_MIN_P808,
        script=ScriptLimits(min_snr_db=settings.SPEECH_CHECK_MIN_SNR_DB),
        min_snr_speaker_db=settings.SPEECH_CHECK_MIN_SNR_DB,
        min_speaker_speech_seconds=settings.SPEECH_CHECK_MIN_SPEAKER_SECONDS,
    )
    return check_take(
        samples.astype(np.float64) / 32768,
        take.item.text,
        embeddings,
        thresholds,
        dialogue_embeddings,
        same_actor_references=references,
        cohort_references=cohort,
    )


def _cohort_references(take: Take) -> list[list[npt.NDArray[np.float64]]]:
    """Return the speaker check's cohort for a take: the COHORT_TAKES cleanest accepted takes of
    each of up to COHORT_SPEAKERS other actors (those whose takes were accepted last). Samples
    only: which actor recorded them goes no further than this query (reviewers stay blind)."""
    accepted = Take.objects.filter(status=Take.Status.ACCEPTED).exclude(actor_id=take.actor_id)
    actors: list[int] = []
    for actor_id in accepted.order_by("-pk").values_list("actor_id", flat=True)[:200]:
        if actor_id not in actors:
            actors.append(actor_id)
        if len(actors) == COHORT_SPEAKERS:
            break
    voices = [_speaker_references(accepted.filter(actor_id=actor_id), COHORT_TAKES) for actor_id in actors]
    return [voice for voice in voices if voice]


def _speaker_references(takes: QuerySet[Take], count: int = REFERENCE_TAKES) -> list[npt.NDArray[np.float64]]:
    """Return the samples of the `count` cleanest of the latest 20 of these takes (the highest
    SNR the speech models measured; a take measured before SNRs were kept counts last)."""
    ranked: list[tuple[float, int, str]] = []
    for pk, key, qc in takes.order_by("-pk").values_list("pk", "audio_key", "qc")[:20]:
        speech = qc.get("speech") if isinstance(qc, dict) else None
        conditions = speech.get("conditions") if isinstance(speech, dict) else None
        snr = conditions.get("snr_db") if isinstance(conditions, dict) else None
        ranked.append((float(snr) if isinstance(snr, int | float) else -1e9, pk, key))
    references = []
    for _, _, key in sorted(ranked, reverse=True)[:count]:
        samples, rate = wav_samples(read_media(key))
        if rate == 16_000:
            references.append(samples.astype(np.float64) / 32768)
    return references


def _speaker_embeddings(takes: QuerySet[Take]) -> list[Any]:
    """Return the stored speaker embeddings of up to 20 of these takes (those the speech models analysed)."""
    return [
        qc["speech"]["speaker_embedding"]
        for qc in takes.values_list("qc", flat=True)[:20]
        if isinstance(qc, dict)
        and isinstance(qc.get("speech"), dict)
        and qc["speech"].get("speaker_embedding")
    ]


def page_peaks(take: Take) -> dict[str, Any] | None:
    """Return the waveform peaks a page of this take carries (`peaks.peaks_for_page`). A take
    analysed before peaks were made gets them now, once, from its audio; None when its audio cannot
    be read, and the page then loads the audio as it always did (never an error page)."""
    if take.peaks is None:
        try:
            samples, sample_rate = wav_samples(read_media(take.audio_key))
        except (OSError, ValueError, EOFError, wave.Error):
            return None
        take.peaks = waveform_peaks(samples, sample_rate)
        # Conditional: a re-analysis that stored peaks meanwhile keeps them.
        Take.objects.filter(pk=take.pk, peaks__isnull=True).update(peaks=take.peaks)
    return peaks_for_page(take.peaks)


def page_tracks(take: Take, window_url: str) -> dict[str, Any]:
    """Return what a workbench-like page carries of a take's waveform: "peaks", "contours",
    "timing" (the word ruler) and "window_url". A long take (`suggestions.is_windowed`) carries
    no contours and no words: the page asks `window_url` (answered by `window_of`) for the part in
    view; "timing" then holds only the speaking rate. A short take carries both, and no url."""
    windowed = is_windowed(take.duration_seconds)
    if windowed:
        return {
            "peaks": page_peaks(take),
            "contours": None,
            "timing": word_timing_summary(take.qc),
            "window_url": window_url,
        }
    tracks = take.waveform_tracks()
    return {
        "peaks": page_peaks(take),
        "contours": tracks,
        "timing": word_timing(take.qc, tracks),
        "window_url": "",
    }


def window_of(take: Take, query: Mapping[str, str]) -> dict[str, Any]:
    """Return `suggestions.take_window` of the take for the query's "start" and "end" seconds
    (clamped to the take); ValueError when either is missing or not a number, or end < start."""
    try:
        start, end = float(query["start"]), float(query["end"])
    except (KeyError, ValueError) as error:
        raise ValueError("start and end must be numbers of seconds") from error
    if not (math.isfinite(start) and math.isfinite(end)) or end < start:
        raise ValueError("the window must end after it starts")
    duration = take.duration_seconds or math.inf
    start, end = max(0.0, start), min(duration, end)
    tracks = take.waveform_tracks()
    return take_window(tracks, word_timing(take.qc, tracks), start, end)


def wav_samples(data: bytes) -> tuple[npt.NDArray[np.int16], int]:
    """Return the int16 samples and rate of a mono 16-bit WAV (the normalised form of every take)."""
    with wave.open(io.BytesIO(data)) as reader:
        if reader.getnchannels() != 1 or reader.getsampwidth() != 2:
            raise ValueError("expected a mono 16-bit WAV")
        return np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2"), reader.getframerate()


def levels_against(measured: Mapping[str, Any], others: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return pitch, energy and rate levels of a take against the speaker's other takes' features.

    Pitch as median f0 in semitones, energy as integrated loudness, rate as articulation rate
    (phones per second of speech, `annotation.audio.speech.rate`; a take measured before issue 42
    has only words per second and is left out of the rate comparison).
    A level is None when this take lacks the measure or fewer than MIN_TAKES_FOR_LEVELS others have it.
    """

    def semitones(hz: object) -> float | None:
        return 12.0 * math.log2(hz) if isinstance(hz, int | float) and hz > 0 else None

    def plain(value: object) -> float | None:
        return float(value) if isinstance(value, int | float) else None

    def level(value: float | None, other_values: list[float | None]) -> Level | None:
        known = [v for v in other_values if v is not None]
        # relative_levels calls too few takes "normal"; the page says "not enough takes" instead.
        if value is None or len(known) < MIN_TAKES_FOR_LEVELS:
            return None
        return relative_levels(value, known)

    return {
        "pitch_level": level(
            semitones(measured.get("median_f0_hz")), [semitones(o.get("median_f0_hz")) for o in others]
        ),
        "energy_level": level(
            plain(measured.get("integrated_loudness_lufs")),
            [plain(o.get("integrated_loudness_lufs")) for o in others],
        ),
        "rate_level": level(plain(measured.get(RATE_KEY)), [plain(o.get(RATE_KEY)) for o in others]),
        "levels_compared_with": len(others),
    }

"""What the recording pages show, computed in a fixed number of queries whatever the data size.

Items per state (`item_state_counts`, `item_state_rows`: the admin's landing page, the recording
dashboard and the actor's tabs), the admin's recording dashboard (`recording_dashboard`), the
script-assignment table (`assignment_table`), a take's measurements (`qc_rows`, `feature_rows`), and the statistics
behind them: acceptance rates and reviewer agreement on verdicts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Case, Count, Q, QuerySet, Value, When

from annotation.audio.prosody import MIN_TAKES_FOR_LEVELS
from annotation.audio.speech.take_check import REVIEW_FLAG_KINDS, review_flags
from annotation.recording.models import Item, Review, Scenario, Take
from annotation.recording.reviews import REVIEWS_PER_TAKE
from webapp.lib.stats import fleiss_kappa
from webapp.models import JobStatus
from webapp.roles import Role, users_with_role

# The dashboard lists at most this many takes short of reviewers, or stuck in a failed analysis.
TAKES_LISTED = 50

VERDICTS = ("accept", "reject")


@dataclass(frozen=True)
class VerdictAgreement:
    takes: int  # takes with a full set of verdicts, the subjects of kappa
    kappa: float | None  # None when undefined: no takes, or every verdict the same
    unanimous_share: float | None  # share of those takes whose reviewers all agreed
    note: str  # why kappa is None, for the page


def acceptance_rate(accepted: int, rejected: int) -> float | None:
    """Return accepted / decided takes, or None when none has been decided yet."""
    decided = accepted + rejected
    return accepted / decided if decided else None


def verdict_agreement(
    verdicts_per_take: Iterable[Sequence[str]], reviewers_per_take: int
) -> VerdictAgreement:
    """Return Fleiss' kappa of accept/reject verdicts over takes with `reviewers_per_take` verdicts.

    Takes with fewer verdicts (still under review, or reviewers replaced) are left out: Fleiss'
    kappa needs the same number of ratings per subject.
    """
    table = [
        [list(verdicts).count(category) for category in VERDICTS]
        for verdicts in verdicts_per_take
        if len(verdicts) == reviewers_per_take and all(verdict in VERDICTS for verdict in verdicts)
    ]
    if not table:
        return VerdictAgreement(0, None, None, "No take has all its verdicts yet.")
    unanimous = sum(1 for row in table if max(row) == reviewers_per_take) / len(table)
    if all(row[0] == reviewers_per_take for row in table) or all(
        row[1] == reviewers_per_take for row in table
    ):
        return VerdictAgreement(
            len(table),
            None,
            unanimous,
            "Every verdict is the same, so chance agreement is total and kappa undefined.",
        )
    return VerdictAgreement(len(table), fleiss_kappa(table), unanimous, "")


# --- Items per state ------------------------------------------------------------------------------


def item_state_counts(items: QuerySet[Item] | None = None) -> dict[str, int]:
    """Return how many of `items` (default: all) are in each state, every state present (one query)."""
    items = Item.objects.all() if items is None else items
    counts = dict(items.order_by().values_list("state").annotate(n=Count("pk")).values_list("state", "n"))
    return {state: counts.get(state, 0) for state in Item.State.values}


def item_state_rows(items: QuerySet[Item] | None = None) -> list[tuple[str, int]]:
    """Return (state label, count) for every item state in pipeline order (one query)."""
    counts = item_state_counts(items)
    return [(label, counts[value]) for value, label in Item.State.choices]


# --- The recording dashboard ----------------------------------------------------------------------


def recording_dashboard() -> dict[str, Any]:
    """Return the dashboard's context: items per state, takes per actor, reviewers' load, agreement.

    Seven queries, however many items, takes and reviewers there are.
    """
    item_states = item_state_rows()
    actor_rows = _actor_rows()
    reviewer_rows = _reviewer_rows()

    verdicts: dict[int, list[str]] = defaultdict(list)
    for take_id, verdict in Review.objects.filter(take__status__in=Take.DECIDED_STATUSES).values_list(
        "take_id", "verdict"
    ):
        verdicts[take_id].append(verdict)

    short_of_reviewers = list(
        Take.objects.waiting_for_review()
        .annotate(n=Count("reviews"))
        .filter(n__lt=REVIEWS_PER_TAKE)
        .select_related("item")[:TAKES_LISTED]
    )
    stuck = list(
        Take.objects.filter(
            status=Take.Status.ANALYSING, analysis_job__status__in=[JobStatus.FAILED, JobStatus.CANCELLED]
        ).select_related("item")[:TAKES_LISTED]
    )
    return {
        "item_states": item_states,
        "actor_rows": actor_rows,
        "reviewer_rows": reviewer_rows,
        "agreement": verdict_agreement(verdicts.values(), REVIEWS_PER_TAKE),
        "short_of_reviewers": short_of_reviewers,
        "stuck": stuck,
        "charts": _charts(item_states, actor_rows, reviewer_rows),
        "reviews_per_take": REVIEWS_PER_TAKE,
    }


def _actor_rows() -> list[dict[str, Any]]:
    per_actor = (
        Take.objects.values("actor", "actor__username", "actor__display_name")
        .annotate(
            total=Count("pk"),
            accepted=Count("pk", filter=Q(status=Take.Status.ACCEPTED)),
            rejected=Count("pk", filter=Q(status=Take.Status.REJECTED)),
            waiting=Count("pk", filter=Q(status__in=Take.OPEN_STATUSES)),
        )
        .order_by("actor")
    )
    return [
        {
            **row,
            "name": row["actor__display_name"] or row["actor__username"],
            "rate": acceptance_rate(row["accepted"], row["rejected"]),
        }
        for row in per_actor
    ]


def _reviewer_rows() -> list[dict[str, Any]]:
    reviewers = users_with_role(Role.REVIEWER).annotate(
        open_reviews=Count("reviews", filter=Review.open_q("reviews__")),
        accepts=Count("reviews", filter=Q(reviews__verdict=Review.Verdict.ACCEPT)),
        rejects=Count("reviews", filter=Q(reviews__verdict=Review.Verdict.REJECT)),
    )
    return [
        {"name": str(user), "open": user.open_reviews, "accepts": user.accepts, "rejects": user.rejects}
        for user in reviewers
    ]


def _charts(
    item_states: list[tuple[str, int]], actor_rows: list[dict[str, Any]], reviewer_rows: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "states": {"labels": [label for label, _ in item_states], "counts": [n for _, n in item_states]},
        "actors": {
            "labels": [row["name"] for row in actor_rows],
            "accepted": [row["accepted"] for row in actor_rows],
            "rejected": [row["rejected"] for row in actor_rows],
            "waiting": [row["waiting"] for row in actor_rows],
        },
        "reviewers": {
            "labels": [row["name"] for row in reviewer_rows],
            "open": [row["open"] for row in reviewer_rows],
            "accepts": [row["accepts"] for row in reviewer_rows],
            "rejects": [row["rejects"] for row in reviewer_rows],
        },
    }


# --- Takes the speech check flagged ---------------------------------------------------------------

FLAG_KIND_LABELS = {"script": "Script in doubt", "speaker": "Voice unlike the actor's accepted takes"}


def flagged_takes() -> dict[str, Any]:
    """Return the admins' view of flagged takes: how many per status and per flag, and the takes.

    Those still in review come first, then the newest decided ones (TAKES_LISTED at most); three
    queries, the per-flag counts reading only the flags of flagged takes.
    """
    flagged = Take.objects.flagged()
    per_status = dict(
        flagged.order_by().values_list("status").annotate(n=Count("pk")).values_list("status", "n")
    )
    per_kind: dict[str, int] = defaultdict(int)
    for flags in flagged.values_list("qc__speech__flags", flat=True):
        for kind in {flag["kind"] for flag in review_flags({"flags": flags})}:
            per_kind[kind] += 1
    rows = flagged.order_by(
        Case(When(status=Take.Status.IN_REVIEW, then=Value(0)), default=Value(1)), "-created_at"
    ).values("public_id", "status", "item__external_id", "qc__speech__flags")[:TAKES_LISTED]
    return {
        "total": sum(per_status.values()),
        "by_status": [
            (label, per_status[value]) for value, label in Take.Status.choices if per_status.get(value)
        ],
        "by_kind": [(FLAG_KIND_LABELS[kind], per_kind[kind]) for kind in REVIEW_FLAG_KINDS if per_kind[kind]],
        "takes": [
            {
                "public_id": row["public_id"],
                "item": row["item__external_id"],
                "status": Take.Status(row["status"]).label,
                "reasons": [flag["reason"] for flag in review_flags({"flags": row["qc__speech__flags"]})],
            }
            for row in rows
        ],
    }


# --- Script assignment ----------------------------------------------------------------------------


def assignment_table() -> dict[str, Any]:
    """Return scripts per actor and scenario, and the unassigned ones (three queries)."""
    scenarios = list(Scenario.choices)
    by_actor: dict[int, dict[str, int]] = defaultdict(dict)
    for actor_id, scenario, count in (
        Item.objects.filter(actor__isnull=False).values_list("actor", "scenario").annotate(n=Count("pk"))
    ):
        by_actor[actor_id][scenario] = count
    unassigned = dict(
        Item.objects.filter(actor__isnull=True)
        .values_list("scenario")
        .annotate(n=Count("pk"))
        .values_list("scenario", "n")
    )
    rows = [
        (
            actor,
            [by_actor[actor.pk].get(value, 0) for value, _ in scenarios],
            sum(by_actor[actor.pk].values()),
        )
        for actor in users_with_role(Role.VOICE_ACTOR)
    ]
    return {
        "scenarios": scenarios,
        "actor_rows": rows,
        "unassigned": [unassigned.get(value, 0) for value, _ in scenarios],
        "unassigned_total": sum(unassigned.values()),
    }


# --- A take's measurements ------------------------------------------------------------------------


def _number(value: object, digits: int, unit: str) -> str:
    return f"{value:.{digits}f} {unit}".strip() if isinstance(value, int | float) else "—"


def qc_rows(qc: dict[str, Any]) -> list[tuple[str, str]]:
    """Return the QC measurements of a take as (label, display) pairs; empty before analysis."""
    if not qc:
        return []
    return [
        ("Duration", _number(qc.get("duration_seconds"), 2, "s")),
        ("Peak", _number(qc.get("peak_dbfs"), 1, "dBFS")),
        ("RMS level", _number(qc.get("rms_dbfs"), 1, "dBFS")),
        ("Integrated loudness", _number(qc.get("integrated_loudness_lufs"), 1, "LUFS")),
        ("Clipped samples", _number(100 * qc.get("clipping_ratio", 0.0), 2, "%")),
        ("Silence", _number(100 * qc.get("silence_ratio", 0.0), 0, "%")),
    ]


def feature_rows(features: dict[str, Any]) -> list[tuple[str, str]]:
    """Return the acoustic features of a take as (label, display) pairs; empty before analysis."""
    if not features:
        return []
    compared = int(features.get("levels_compared_with", 0))
    if compared >= MIN_TAKES_FOR_LEVELS:
        levels = (
            ", ".join(
                f"{name} {features.get(f'{name}_level') or '—'}" for name in ("pitch", "energy", "rate")
            )
            + f" (against {compared} takes)"
        )
    else:
        levels = f"needs {MIN_TAKES_FOR_LEVELS} other analysed takes ({compared} so far)"
    pitch = _number(features.get("median_f0_hz"), 0, "Hz")
    if isinstance(features.get("f0_range_semitones"), int | float):
        pitch += f" (range {features['f0_range_semitones']:.1f} semitones)"
    return [
        ("Median pitch", pitch),
        ("Intonation", str(features.get("intonation") or "—")),
        ("Speaking rate", _number(features.get("phones_per_second"), 1, "phones/s (pauses left out)")),
        ("Voiced", _number(100 * features.get("voiced_ratio", 0.0), 0, "%")),
        ("Mean intensity", _number(features.get("mean_intensity_db"), 1, "dB")),
        ("Against the speaker's other takes", levels),
    ]


def speech_flags(qc: dict[str, Any]) -> list[str]:
    """Return the speech models' flags on a take as sentences for its actor (empty when none)."""
    speech = qc.get("speech") if qc else None
    if not isinstance(speech, dict):
        return []
    return [str(flag["reason"]) for flag in speech.get("flags", [])]


def _vocal_events(events: object) -> str:
    """Return where a take laughs, breathes, sighs... outside its words ("—" before issue 39's check)."""
    if not isinstance(events, list):
        return "—"
    spans = [
        f"{event['start']:.1f}-{event['end']:.1f} s"
        for event in events
        if isinstance(event, dict) and isinstance(event.get("start"), int | float)
    ]
    return ", ".join(spans) if spans else "none"


def speech_rows(qc: dict[str, Any]) -> list[tuple[str, str]]:
    """Return the speech models' figures of a take as (label, display) pairs; empty when unchecked."""
    speech = qc.get("speech") if qc else None
    if not isinstance(speech, dict):
        return []
    check = speech.get("script_check") or {}
    activity = speech.get("activity") or {}
    dnsmos = speech.get("dnsmos") or {}
    level = speech.get("loudness") or {}
    conditions = speech.get("conditions") or {}
    verdicts = {
        "matches": "matches",
        "doubtful": "doubtful",
        "does_not_match": "does not match",
        "too_noisy": "too noisy to check",
    }
    script = verdicts.get(str(check.get("verdict")), "not checked")
    if check.get("doubtful_words"):
        script += " (" + ", ".join(f"'{word}'" for word in check["doubtful_words"]) + ")"
    similarity = speech.get("speaker_similarity")
    voice = _number(similarity, 2, "") if similarity is not None else "no accepted takes yet"
    kinds = {flag.get("kind") for flag in speech.get("flags", []) if isinstance(flag, dict)}
    if similarity is not None and "too_short" in kinds:
        voice = f"too short to check ({_number(conditions.get('speech_seconds'), 1, 's')} of speech)"
    return [
        ("Script", script),
        ("Speech above the noise (SNR)", _number(conditions.get("snr_db"), 0, "dB")),
        ("Speaking rate", _number(speech.get("phones_per_second"), 1, "phones/s")),
        (
            "Silence at start / end",
            f"{_number(activity.get('leading_silence_seconds'), 1, 's')} / "
            f"{_number(activity.get('trailing_silence_seconds'), 1, 's')}",
        ),
        (
            "Pauses",
            f"{activity.get('pause_count', 0)} (longest {_number(activity.get('longest_pause_seconds'), 1, 's')})",
        ),
        ("Vocal sounds outside words (never trimmed)", _vocal_events(speech.get("vocal_events"))),
        ("Estimated quality (DNSMOS P.808)", _number(dnsmos.get("p808"), 2, "of 5")),
        ("True peak", _number(level.get("true_peak_dbtp"), 1, "dBTP")),
        ("Voice against accepted takes", voice),
    ]

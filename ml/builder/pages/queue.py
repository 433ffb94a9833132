"""Spot-check workflows: draw a build's sample, hand checks out one at a time, store decisions.

The races each one prevents:

- ``draw_spot_checks``: two admins drawing at once must not create a check twice for a sample;
  the unique constraint on ``SpotCheck.sample`` and ``ignore_conflicts`` make a second draw add
  only samples no check holds yet.
- ``take_next``: two annotators asking for work at the same moment must not get the same
  check; ``SELECT ... FOR UPDATE SKIP LOCKED`` over unclaimed checks gives each a different one.
- ``decide``: the decision and what it does to the sample (a human drop takes it out of the
  export; a dropped dialogue turn cuts its dialogue there or drops it whole) are written in one
  transaction with the build and the check locked, so two checkers deciding turns of one
  dialogue at once each see the other's decision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import BooleanField, Count, Exists, ExpressionWrapper, OuterRef, Q, QuerySet
from django.utils import timezone

from annotation.labelling.schema import (
    check_perception,
    check_tom,
    normalise_perception,
    normalise_tom,
    script_words,
)
from ml.builder.export_versions import BuildInFlight, in_flight_refusal, start_export
from ml.builder.models import Build, BuildSample, SampleStatus, SpotCheck
from ml.builder.pages.rules import (
    CUT_AWAY,
    DIALOGUE_DROPPED,
    DROP,
    FIX,
    KEEP,
    REST_TITLES,
    WHOLE_DIALOGUE,
    DecisionProblem,
    blamed_stage,
    kept_turns_removed,
    removed_turns,
    turns_text,
)
from ml.builder.pages.sampling import allocate, draw_from_stratum, sample_size
from webapp import audit
from webapp.lib.vocabulary import DEFAULT_STRATEGIES
from webapp.listening import listening_refusal
from webapp.models import User

HUMAN_DROP = "spot_check_drop"  # BuildSample.drop_reason of a sample an annotator dropped
# Every drop_reason a spot-check writes: the dropped sample, and the turns its dialogue loses with it.
HUMAN_DROP_REASONS = (HUMAN_DROP, CUT_AWAY, DIALOGUE_DROPPED)
DEFAULT_SPOT_CHECK_RATE = 0.02
# As in blind review: a checker may play at up to twice the speed (the players offer it).
MAX_SPOT_CHECK_SPEED = 2.0


IN_DIALOGUE = ExpressionWrapper(Q(dialogue__isnull=False), output_field=BooleanField())


def stratum_of(prompt_variant: str, in_dialogue: object) -> str:
    """Return the spot-check stratum of a sample: its prompt variant, single or dialogue turn."""
    return f"{prompt_variant}/{'dialogue' if in_dialogue else 'single'}"


def draw_spot_checks(build: Build, *, fraction: float | None = None, count: int | None = None) -> int:
    """Open spot-checks for a seeded, stratified sample of the build's finished, unchecked samples.

    Without a size, the build's ``spot_check_rate`` (or 2%) of them. Return how many were opened.
    The strata are counted in the database and their ids read one stratum at a time, so a draw
    from a build of hundreds of thousands of samples never holds them all. Refused (BuildInFlight)
    while the build runs: a re-run's samples are drawn once they are judged again.
    """
    refusal = in_flight_refusal(build)
    if refusal:
        raise BuildInFlight(refusal)
    if fraction is None and count is None:
        fraction = float(build.config.get("spot_check_rate") or DEFAULT_SPOT_CHECK_RATE)
    checked = SpotCheck.objects.in_use().filter(sample=OuterRef("pk"))
    candidates = BuildSample.objects.filter(build=build).finished().exclude(Exists(checked))
    sizes = {
        (variant, in_dialogue): n
        for variant, in_dialogue, n in candidates.annotate(in_dialogue=IN_DIALOGUE)
        .values_list("prompt_variant", "in_dialogue")
        .annotate(n=Count("id"))
        .values_list("prompt_variant", "in_dialogue", "n")
    }
    if not sizes:
        return 0
    total = sample_size(sum(sizes.values()), fraction=fraction, count=count)
    shares = allocate({stratum_of(*key): n for key, n in sizes.items()}, total)
    # The seed names the draw, so a second draw of the same build picks afresh among the rest.
    seed = f"{build.seed}:{SpotCheck.objects.filter(build=build).count()}"
    chosen: list[int] = []
    for variant, in_dialogue in sizes:
        stratum = stratum_of(variant, in_dialogue)
        ids = candidates.filter(prompt_variant=variant, dialogue__isnull=not in_dialogue)
        chosen += draw_from_stratum(list(ids.values_list("id", flat=True)), shares[stratum], seed, stratum)
    made = SpotCheck.objects.bulk_create(
        [SpotCheck(build=build, sample_id=pk) for pk in sorted(chosen)], ignore_conflicts=True
    )
    return len(made)


def open_checks(user: User) -> QuerySet[SpotCheck]:
    """Return the user's claimed, undecided checks, oldest first."""
    return SpotCheck.objects.in_use().filter(annotator=user, submitted_at__isnull=True).order_by("id")


def take_next(user: User, build: Build | None = None) -> SpotCheck | None:
    """Return the user's open check, else claim the oldest unclaimed one (of `build`, if given)."""
    mine = open_checks(user)
    if build is not None:
        mine = mine.filter(build=build)
    if (check := mine.first()) is not None:
        return check
    with transaction.atomic():
        free = SpotCheck.objects.in_use().filter(annotator__isnull=True, submitted_at__isnull=True)
        if build is not None:
            free = free.filter(build=build)
        check = free.select_for_update(skip_locked=True).order_by("id").first()
        if check is None:
            return None
        check.annotator = user
        check.save(update_fields=["annotator"])
    return check


@dataclass(frozen=True)
class Decision:
    """What the annotator decided; ``perception`` / ``tom`` are the edited fields of a fix."""

    verdict: str
    reasons: Sequence[str] = ()
    stage: str = ""
    note: str = ""
    perception: Mapping[str, Any] = field(default_factory=dict)
    tom: Mapping[str, Any] = field(default_factory=dict)
    response: str = ""
    rest: str = ""  # a dropped dialogue turn: CUT or WHOLE_DIALOGUE (``rules.REST_TITLES``)
    remove_kept: bool = False  # confirmed: turns other checks kept may go with this drop


STRATEGY_SLUGS = frozenset(slug for slug, _ in DEFAULT_STRATEGIES)
# What a spot-check decision writes, and the audit log records before and after.
SPOT_CHECK_AUDIT_FIELDS = (
    "verdict",
    "reasons",
    "stage",
    "note",
    "perception",
    "tom",
    "response",
    "rest",
    "submitted_at",
)


def corrected_labels(sample: BuildSample, decision: Decision) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Return the fixed (perception, tom, response); raise DecisionProblem when they are not valid
    label documents (the workbench's checks) or change nothing."""
    perception = normalise_perception({**sample.perception, **decision.perception})
    tom = normalise_tom({**sample.tom, **decision.tom})
    response = decision.response.strip()
    problems = [
        *check_perception(perception, words=script_words(sample.text)),
        *check_tom(tom, strategy_slugs=STRATEGY_SLUGS),
    ]
    if problems:
        raise DecisionProblem("; ".join(str(problem) for problem in problems))
    unchanged = (
        perception == normalise_perception(sample.perception)
        and tom == normalise_tom(sample.tom)
        and response in ("", sample.response.strip())
    )
    if unchanged:
        raise DecisionProblem("a fix changes a label or the response; nothing was changed")
    return perception, tom, response if response != sample.response.strip() else ""


def not_heard(sample: BuildSample, user: User) -> str | None:
    """Return why the user cannot have heard the sample's audio (the user's query, then the spoken
    response) to the end yet, None when they can have: the rule of every listening gate
    (`webapp.listening`)."""
    for key, seconds, what in (
        (sample.user_audio_key, sample.audio_seconds, "the user's audio"),
        (sample.response_audio_key, None, "the spoken response"),
    ):
        refusal = listening_refusal(user.pk, key, what, seconds=seconds, max_speed=MAX_SPOT_CHECK_SPEED)
        if refusal is not None:
            return refusal
    return None


def decide(check: SpotCheck, user: User, decision: Decision) -> SpotCheck:
    """Store the annotator's keep / fix / drop with reasons and the stage blamed, once they can
    have heard the sample's audio to the end (`not_heard`).

    A drop also takes the sample out of the build's export (status dropped, reason
    ``HUMAN_DROP``; ``dropped_at`` stays blank, so a re-run of the pipeline never brings it back);
    a dropped dialogue turn cuts its dialogue there or drops it whole, as the checker chose
    (``dialogue_choice``, ``settle_drops``), never removing a turn another check kept unless
    the checker confirmed it.
    A fix keeps the corrected labels and response on the check (``corrections``). The decision
    that completes a round (no open check of the build left) starts a new export version, so the
    decisions reach the records jobs train on.
    """
    stage = blamed_stage(decision.verdict, list(decision.reasons), decision.stage)
    with transaction.atomic():
        # The build row first: two annotators deciding a build's last two checks at once must see
        # each other's decision, or neither would notice the round is complete.
        Build.objects.select_for_update().get(pk=check.build_id)
        locked = SpotCheck.objects.select_for_update().select_related("sample").get(pk=check.pk)
        was_open = locked.submitted_at is None
        if locked.annotator_id != user.pk:
            raise DecisionProblem("this spot-check is someone else's")
        refusal = not_heard(locked.sample, user)
        if refusal is not None:
            raise DecisionProblem(refusal)
        perception: dict[str, Any] = {}
        tom: dict[str, Any] = {}
        response = ""
        if decision.verdict == FIX:
            perception, tom, response = corrected_labels(locked.sample, decision)
        rest, removed_kept = dialogue_choice(locked, decision)
        locked.verdict, locked.reasons, locked.stage = decision.verdict, list(decision.reasons), stage
        locked.note, locked.perception, locked.tom, locked.response = (
            decision.note.strip(),
            perception,
            tom,
            response,
        )
        before = audit.fields_of(locked, *SPOT_CHECK_AUDIT_FIELDS)
        locked.rest, locked.removed_kept = rest, removed_kept
        locked.submitted_at = timezone.now()
        locked.save()
        audit.record(
            actor=user,
            action=audit.SPOT_CHECK,
            obj=locked,
            before=before,
            after=audit.fields_of(locked, *SPOT_CHECK_AUDIT_FIELDS),
        )
        settle_drops(locked.sample)
        round_complete = (
            not SpotCheck.objects.in_use().filter(build_id=check.build_id, submitted_at__isnull=True).exists()
        )
        if was_open and round_complete and not in_flight_refusal(locked.build):
            start_export(locked.build, "a spot-check round was complete", user)
    return locked


def _dialogue_verdicts(sample: BuildSample, exclude: SpotCheck | None = None) -> list[tuple[int, str, str]]:
    """Return (turn, verdict, rest) of the decided checks of the sample's dialogue."""
    checks = SpotCheck.objects.filter(sample__dialogue_id=sample.dialogue_id, submitted_at__isnull=False)
    if exclude is not None:
        checks = checks.exclude(pk=exclude.pk)
    return list(checks.values_list("sample__turn", "verdict", "rest"))


def _drops(verdicts: Sequence[tuple[int, str, str]]) -> dict[int, str]:
    # A drop decided before the rest was asked for took the whole dialogue out of the export.
    return {turn: rest or WHOLE_DIALOGUE for turn, verdict, rest in verdicts if verdict == DROP}


def dialogue_choice(check: SpotCheck, decision: Decision) -> tuple[str, list[int]]:
    """Return what a decision does to the rest of its dialogue: (rest, kept turns it removes).

    Raise DecisionProblem when a dropped dialogue turn comes without a choice for the rest, when
    the choice comes with anything else, or when it would remove turns another check explicitly
    kept or fixed and the checker has not confirmed that they go too.
    """
    sample = check.sample
    if decision.verdict != DROP or sample.dialogue_id is None:
        if decision.rest:
            raise DecisionProblem(
                "what happens to the rest of the dialogue is asked of a dropped dialogue turn only"
            )
        return "", []
    if decision.rest not in REST_TITLES:
        raise DecisionProblem(
            f"turn {sample.turn} is part of a dialogue: say what happens to the rest of it "
            "(cut the dialogue here, or drop the whole dialogue)"
        )
    others = _dialogue_verdicts(sample, exclude=check)
    drops = {**_drops(others), sample.turn: decision.rest}
    turns = BuildSample.objects.filter(dialogue_id=sample.dialogue_id).values_list("turn", flat=True)
    removed = removed_turns(turns, drops, HUMAN_DROP)
    kept = [turn for turn, verdict, _ in others if verdict in (KEEP, FIX)]
    lost = kept_turns_removed(removed, kept, sample.turn)
    if lost and not decision.remove_kept:
        which = turns_text(lost)
        raise DecisionProblem(
            f"{which} of this dialogue {'was' if len(lost) == 1 else 'were'} kept by a spot-check, and this "
            f"choice removes {'it' if len(lost) == 1 else 'them'}: confirm that {which} go too, or cut the "
            "dialogue elsewhere"
        )
    return decision.rest, lost


def settle_drops(sample: BuildSample) -> None:
    """Bring the export status of the sample (and of every turn of its dialogue) in line with the
    spot-check drops decided so far: a dropped sample leaves the export, a dialogue turn takes the
    rest of its dialogue with it as its checker chose, and a changed mind brings turns back.
    Samples the pipeline dropped are never touched."""
    samples = BuildSample.objects.filter(pk=sample.pk)
    removed: dict[int, str] = {}
    if sample.dialogue_id is not None:
        samples = BuildSample.objects.filter(dialogue_id=sample.dialogue_id)
        removed = removed_turns(
            samples.values_list("turn", flat=True), _drops(_dialogue_verdicts(sample)), HUMAN_DROP
        )
    elif SpotCheck.objects.filter(sample=sample, verdict=DROP, submitted_at__isnull=False).exists():
        removed = {sample.turn: HUMAN_DROP}
    for pk, turn, status, reason in samples.values_list("pk", "turn", "status", "drop_reason"):
        ours = status == SampleStatus.ACTIVE or reason in HUMAN_DROP_REASONS
        if turn in removed and ours and reason != removed[turn]:
            BuildSample.objects.filter(pk=pk).update(status=SampleStatus.DROPPED, drop_reason=removed[turn])
        elif turn not in removed and reason in HUMAN_DROP_REASONS:
            # A changed mind: the annotator dropped it before and now keeps or fixes it.
            BuildSample.objects.filter(pk=pk).update(status=SampleStatus.ACTIVE, drop_reason="")


def removed_by_others(sample: BuildSample) -> str:
    """Return, for a dialogue turn another check's drop took out of the export, which drop did it
    ("" otherwise): the page says so, so that keeping it is never mistaken for bringing it back."""
    if sample.dialogue_id is None or sample.drop_reason not in (CUT_AWAY, DIALOGUE_DROPPED):
        return ""
    drops = {turn: rest for turn, verdict, rest in _dialogue_verdicts(sample) if verdict == DROP}
    if not drops:
        return ""
    turn = min(drops)
    how = "the dialogue was cut there" if drops[turn] == "cut" else "the whole dialogue was dropped"
    return (
        f"Turn {turn} of this dialogue was dropped and {how}: this turn is not exported whatever you decide."
    )


def kept_turns_of_dialogue(sample: BuildSample) -> list[int]:
    """Return the other turns of the sample's dialogue a spot-check kept or fixed (the page names them)."""
    if sample.dialogue_id is None:
        return []
    return sorted(
        turn
        for turn, verdict, _ in _dialogue_verdicts(sample)
        if verdict in (KEEP, FIX) and turn != sample.turn
    )


def corrections(build: Build) -> dict[int, dict[str, Any]]:
    """Return {sample id: {"perception", "tom", "response"}} for the build's fixed samples, for the
    export to lay over the machine's labels (empty values: unchanged)."""
    fixes = SpotCheck.objects.in_use().filter(build=build, verdict=FIX, submitted_at__isnull=False)
    return {
        sample_id: {"perception": perception, "tom": tom, "response": response}
        for sample_id, perception, tom, response in fixes.values_list(
            "sample_id", "perception", "tom", "response"
        )
    }

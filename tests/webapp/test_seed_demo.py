"""`manage.py seed_demo` loads users for every role and 25 items with real speech, idempotently."""

from __future__ import annotations

import io
import re
import wave
from collections import Counter
from typing import Any

import pytest
from django.core.management import call_command

from annotation.gold.models import GoldReference
from annotation.labelling.models import Annotation
from annotation.recording.models import Item, Review, Take
from evaluation.outputs.models import ModelOutput
from webapp.models import User
from webapp.roles import Role, user_roles
from webapp.storage import read_media


def _counts() -> tuple[int, ...]:
    return (
        User.objects.count(),
        Item.objects.count(),
        Take.objects.count(),
        Review.objects.count(),
        Annotation.objects.filter(status="submitted").count(),
        GoldReference.objects.count(),
        ModelOutput.objects.count(),
    )


@pytest.mark.usefixtures("media_root")
def test_seed_demo_twice_creates_everything_once(db: None) -> None:
    first, second = io.StringIO(), io.StringIO()
    call_command("seed_demo", stdout=first)
    counts = (User.objects.count(), Item.objects.count(), Take.objects.count(), Review.objects.count())
    spoken = dict(ModelOutput.objects.values_list("pk", "response_audio_key"))
    call_command("seed_demo", stdout=second)
    # The replies' speech is kept, not synthesised again: a re-seed drops no judgement.
    assert dict(ModelOutput.objects.values_list("pk", "response_audio_key")) == spoken
    assert (
        User.objects.count(),
        Item.objects.count(),
        Take.objects.count(),
        Review.objects.count(),
    ) == counts

    # EchoMind's demo deliveries are items too (11 of them, recorded); EchoEval's are the rest.
    echoeval = Item.objects.single_turn().filter(echomind_delivery__isnull=True)
    assert echoeval.count() == 25
    assert Item.objects.single_turn().count() - echoeval.count() == 11
    assert Item.objects.dialogue_turns().count() == 15  # three five-turn demo dialogues
    assert Counter(echoeval.values_list("scenario", flat=True)) == {
        "implicit": 5,
        "audio-dominant": 5,
        "high-arousal": 5,
        "modality-conflict": 5,
        "emotion-shift": 5,
    }
    held = set().union(*(user_roles(user) for user in User.objects.all()))
    assert held == set(Role)
    assert "annotator1" in first.getvalue()
    # Progress as it goes (issue 41): what a first run costs, counts per step, how long it took.
    assert "a first run takes about 2-3 minutes" in first.getvalue()
    assert "25 demo items ready" in first.getvalue() and "3 demo dialogues ready" in first.getvalue()
    assert re.search(r"model outputs, in \d+ s\.", first.getvalue())
    assert "already existed" in second.getvalue()

    take = Take.objects.filter(status=Take.Status.ACCEPTED).first()
    assert take is not None
    with wave.open(io.BytesIO(read_media(take.audio_key))) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (16000, 1, 2)
        assert wav.getnframes() / 16000 > 1.0
    assert "actor" not in take.audio_key
    assert take.qc and take.contours, "demo takes are measured so their pages show contours"


@pytest.mark.usefixtures("media_root")
def test_the_demo_has_spoken_replies_gold_on_train_and_test_and_an_offline_judge(db: None) -> None:
    from evaluation.judging.models import JudgeConfig
    from evaluation.outputs.models import System
    from ml.jobs.datasets import ready_counts
    from ml.jobs.models import DatasetSnapshot

    call_command("seed_demo", stdout=io.StringIO())

    systems = System.objects.filter(name__endswith="(demo)")
    assert systems.count() == 2 and not systems.filter(text_only=True).exists()
    outputs = ModelOutput.objects.filter(system__in=systems)
    assert outputs.exists() and not outputs.filter(response_audio_key="").exists()
    with wave.open(io.BytesIO(read_media(outputs.first().response_audio_key))) as wav:  # type: ignore[union-attr]
        assert wav.getnframes() / wav.getframerate() > 1.0, "a spoken reply, not silence"
    assert set(outputs.values_list("item__split", flat=True)) == {"test"}

    gold_splits = Counter(GoldReference.objects.current().values_list("item__split", flat=True))
    assert gold_splits["train"] >= 3 and gold_splits["test"] >= 3
    ready = ready_counts(DatasetSnapshot.Purpose.SFT)
    assert ready["train"] >= 3

    judge = JudgeConfig.objects.get(offline_heuristic=True)
    assert "not a real judge" in judge.name and not judge.attach_audio


def _as_sent(form: Any, **typed: Any) -> dict[str, Any]:
    """Return what a browser sends for a form left at its initial values, plus what was typed."""
    data = {name: field.initial for name, field in form.fields.items() if field.initial is not None}
    data.update(typed)
    return {name: value.pk if hasattr(value, "pk") else value for name, value in data.items()}


@pytest.mark.usefixtures("media_root")
def test_a_newcomer_sends_the_demo_forms_as_they_come(db: None) -> None:
    from evaluation.judging.forms import JudgeRunForm
    from evaluation.studies.creation.items import create_study
    from evaluation.studies.forms import StudyForm
    from ml.jobs.forms import SftJobForm

    call_command("seed_demo", stdout=io.StringIO())
    admin = User.objects.get(username="admin")

    study_form = StudyForm(_as_sent(StudyForm(), name="First study"))
    assert study_form.is_valid(), study_form.errors
    study = create_study(study_form.to_spec(), created_by=admin)
    assert {"naturalness", "prosody", "emotional_alignment"} <= set(study.dimensions)

    judge_form = JudgeRunForm(_as_sent(JudgeRunForm()))
    assert judge_form.is_valid(), judge_form.errors
    assert judge_form.cleaned_data["judge_config"].offline_heuristic

    sft_form = SftJobForm(_as_sent(SftJobForm()))
    assert sft_form.is_valid(), sft_form.errors
    assert sft_form.chosen_splits() == ["train"]

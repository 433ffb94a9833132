"""The export lays annotators' spot-check fixes over the machine's labels; drops stay out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ml.builder.export import export_build
from ml.builder.models import Build, BuildSample, SpotCheck
from ml.builder.pages.queue import Decision, decide
from ml.core.training_records import RECORDS_FILE, TrainingRecord, read_wav, render_gold_perception
from tests.ml.builder.pages.spotcheck_builds import finished_build
from tests.support.listening import listen
from webapp.models import User
from webapp.roles import Role
from webapp.storage import read_media

pytestmark = pytest.mark.django_db


def _decide(build: Build, external_id: str, annotator: User, decision: Decision) -> None:
    sample = BuildSample.objects.get(build=build, external_id=external_id)
    check = SpotCheck.objects.create(build=build, sample=sample, annotator=annotator)
    listen(annotator, sample.user_audio_key, sample.response_audio_key)
    decide(check, annotator, decision)


def _records(folder: Path) -> dict[str, TrainingRecord]:
    lines = (folder / RECORDS_FILE).read_text(encoding="utf-8").splitlines()
    return {record.item_id: record for record in map(TrainingRecord.from_json, lines)}


def test_a_fixed_sample_is_exported_with_the_fix_and_a_dropped_one_not_at_all(
    tmp_path: Path, media_root: Path, make_user
) -> None:
    # given a finished build of three single samples and one three-turn dialogue
    build = finished_build(single=3, dialogues=1, audio=True)
    Build.objects.filter(pk=build.pk).update(turns_per_dialogue=3)
    build.refresh_from_db()
    annotator = make_user(Role.ANNOTATOR)

    # when an annotator fixes one sample's labels and response, fixes a dialogue turn's response
    # and drops another sample
    _decide(
        build,
        "S-1",
        annotator,
        Decision(
            "fix",
            ("perception_wrong",),
            perception={"emotion": "angry"},
            tom={"latent_need": "to be treated fairly", "recommended_strategies": ["reassurance"]},
            response="That must feel unfair.",
        ),
    )
    _decide(build, "D-1.t1", annotator, Decision("fix", ("response_inappropriate",), response="I hear you."))
    _decide(build, "S-2", annotator, Decision("drop", ("audio_wrong_emotion",)))
    counts = export_build(build, tmp_path)

    # then the fixed record carries the annotator's labels, spans and response
    records = _records(tmp_path)
    fixed = records["S-1"]
    assert fixed.emotion == "angry"
    assert fixed.gold_perception["emotion"] == "angry"
    assert fixed.gold_perception["situation"] == "missed a promotion"  # untouched labels stay
    assert fixed.perception == render_gold_perception(fixed.gold_perception)
    assert fixed.gold_tom["latent_need"] == "to be treated fairly"
    assert "to be treated fairly" in fixed.reasoning
    assert fixed.strategies == ("Reassurance",)
    assert fixed.response == "That must feel unfair."
    assert "<response>That must feel unfair.</response>" in (fixed.target or "")
    # and the fixed dialogue turn trains on its new reply, which the later turns hear
    assert records["D-1.t1"].response == "I hear you."
    assert records["D-1.t1"].gold_perception["emotion"] == "sad"  # a response-only fix keeps labels
    assert [turn.reply for turn in records["D-1.t3"].history] == ["I hear you.", "That sounds really hard."]
    # and an unchecked sample keeps the machine's labels; the dropped one is not exported
    assert records["S-3"].emotion == "sad" and records["S-3"].response == "That sounds really hard."
    assert "S-2" not in records
    provenance = [json.loads(line) for line in (tmp_path / "provenance.jsonl").read_text().splitlines()]
    assert {line["item_id"] for line in provenance if line["fixed_by_annotator"]} == {"S-1", "D-1.t1"}
    assert counts == {
        "single_turn": 2,
        "dialogues": 1,
        "dialogue_turns": 3,
        "dialogues_cut_short": 0,
        "fixed_by_annotators": 2,
        "response_audio_not_revoiced": 0,
    }
    # and a fixed reply is voiced anew, so its audio says what the record says; the others keep theirs
    assert {line["item_id"] for line in provenance if line["response_audio_revoiced"]} == {"S-1", "D-1.t1"}
    machine_audio = {
        sample.external_id: read_media(sample.response_audio_key)
        for sample in BuildSample.objects.filter(build=build)
    }
    exported = {line["item_id"]: (tmp_path / line["response_audio"]).read_bytes() for line in provenance}
    assert exported["S-3"] == machine_audio["S-3"]
    for item_id in ("S-1", "D-1.t1"):
        assert exported[item_id] != machine_audio[item_id]
        samples, rate = read_wav(exported[item_id])
        assert len(samples) / rate > 0.3  # speech, not an empty file


def test_a_fix_the_speech_server_cannot_voice_keeps_the_old_audio_and_says_why(
    tmp_path: Path, media_root: Path, make_user
) -> None:
    # given a build voiced by a speech server that is gone
    build = finished_build(single=2, audio=True)
    Build.objects.filter(pk=build.pk).update(
        config={**build.config, "tts_backend": "openai", "tts_base_url": "http://127.0.0.1:9/v1"}
    )
    build.refresh_from_db()
    annotator = make_user(Role.ANNOTATOR)
    _decide(build, "S-1", annotator, Decision("fix", ("response_inappropriate",), response="I hear you."))
    _decide(build, "S-2", annotator, Decision("fix", ("response_inappropriate",), response="That is hard."))

    # when it is exported
    counts = export_build(build, tmp_path)

    # then the record trains on the fix, its old audio is kept, and the provenance says why
    assert _records(tmp_path)["S-1"].response == "I hear you."
    provenance = {
        line["item_id"]: line
        for line in map(json.loads, (tmp_path / "provenance.jsonl").read_text().splitlines())
    }
    fixed = provenance["S-1"]
    assert fixed["fixed_by_annotator"] and not fixed["response_audio_revoiced"]
    assert "could not be voiced" in fixed["response_audio_error"]
    sample = BuildSample.objects.get(build=build, external_id="S-1")
    assert (tmp_path / fixed["response_audio"]).read_bytes() == read_media(sample.response_audio_key)
    # and the second fix is not tried against the server that failed, and the counts say so
    assert provenance["S-2"]["response_audio_error"] == fixed["response_audio_error"]
    assert counts["response_audio_not_revoiced"] == 2


def test_the_manifest_and_the_build_page_carry_the_b6_statistics(
    tmp_path: Path, media_root: Path, client_for
) -> None:
    from django.urls import reverse

    from annotation.audio.acoustics import count_words
    from ml.builder.logic.statistics import wav_seconds

    build = finished_build(single=2, dialogues=1, audio=True)
    Build.objects.filter(pk=build.pk).update(turns_per_dialogue=3)
    build.refresh_from_db()
    export_build(build, tmp_path)

    statistics = json.loads((tmp_path / "manifest.json").read_text())["statistics"]
    records = list(_records(tmp_path).values())
    provenance = [json.loads(line) for line in (tmp_path / "provenance.jsonl").read_text().splitlines()]
    query_seconds = sum(wav_seconds((tmp_path / record.audio_path).read_bytes()) for record in records)
    response_seconds = sum(
        wav_seconds((tmp_path / line["response_audio"]).read_bytes()) for line in provenance
    )
    assert query_seconds > 0 and response_seconds > 0
    assert statistics == {
        "single_turn_samples": 2,
        "multi_turn_sessions": 1,
        "turns_per_session": 3.0,
        "query_audio_hours": round(query_seconds / 3600, 3),
        "response_audio_hours": round(response_seconds / 3600, 3),
        "mean_query_words": round(sum(count_words(r.text) for r in records) / 5, 1),
        "mean_reasoning_words": round(
            sum(count_words(" ".join([r.perception, r.reasoning, *r.strategies])) for r in records) / 5, 1
        ),
        "mean_response_words": round(sum(count_words(r.response) for r in records) / 5, 1),
    }

    Build.objects.filter(pk=build.pk).update(export_path=str(tmp_path))
    html = client_for("admin").get(reverse("ml:builder:build", args=[build.pk])).content.decode()
    assert 'data-testid="build-statistics"' in html
    assert "Sessions (multi-turn)</dt><dd>1</dd>" in html
    assert f"Average query length (words)</dt><dd>{statistics['mean_query_words']}</dd>" in html


def test_the_manifest_and_the_build_page_carry_the_speech_checks(
    tmp_path: Path, media_root: Path, client_for
) -> None:
    from django.urls import reverse

    # given a finished build whose perception stage heard one fast single-turn query with its
    # stressed word, and a dialogue whose third turn sounds like another speaker
    build = finished_build(single=1, dialogues=1, audio=True)
    Build.objects.filter(pk=build.pk).update(turns_per_dialogue=3)
    build.refresh_from_db()
    samples = BuildSample.objects.filter(build=build)
    single = samples.get(dialogue__isnull=True)  # by itself: databases sort NULL ids apart
    turns = list(samples.filter(dialogue__isnull=False).order_by("turn", "id"))
    heard = {"asked": "honestly", "detected": ["honestly"], "agrees": True}
    single.speech = {
        "rate_ratio": 1.31,
        "rate_level": "high",
        "stress": heard,
        "pauses": {"count": 1, "longest_seconds": 0.4},
    }
    single.save(update_fields=["speech"])
    for turn, similarity in zip(turns, (0.9, 0.88, 0.55), strict=True):
        turn.speech = {
            "rate_ratio": 1.0,
            "rate_level": "normal",
            "stress": {"asked": "", "detected": [], "agrees": True},
            "speaker_similarity": similarity,
        }
        turn.save(update_fields=["speech"])

    # when it is exported
    export_build(build, tmp_path)

    # then the manifest sums the checks, and each record's provenance carries its own
    checks = json.loads((tmp_path / "manifest.json").read_text())["speech_checks"]
    assert checks["rate_levels"] == {"high": 1, "normal": 3}
    assert (checks["stress_found"], checks["stress_asked"], checks["stress_unasked_clean"]) == (1, 1, 3)
    assert (checks["dialogues_compared"], checks["lowest_turn_speaker_similarity"]) == (1, 0.55)
    assert checks["turns_below_speaker_threshold"] == 1
    provenance = [json.loads(line) for line in (tmp_path / "provenance.jsonl").read_text().splitlines()]
    assert [line["speech"].get("speaker_similarity") for line in provenance] == [None, 0.9, 0.88, 0.55]
    # and the build page shows them
    Build.objects.filter(pk=build.pk).update(export_path=str(tmp_path))
    html = client_for("admin").get(reverse("ml:builder:build", args=[build.pk])).content.decode()
    assert 'data-testid="build-speech-checks"' in html
    assert "Asked-for stress heard</dt><dd>1 of 1</dd>" in html
    assert "Speaking rate (slow / normal / fast)</dt><dd>0 / 3 / 1</dd>" in html
    assert "Lowest turn speaker similarity</dt><dd>0.55</dd>" in html


def test_the_export_reports_each_record_as_it_is_written(tmp_path: Path) -> None:
    build = finished_build(single=2, dialogues=1, turns=2, audio=True)
    heard: list[tuple[int, int]] = []

    def on_written(records: int) -> None:
        # What is on disk when the count is heard: the records file fills as the count rises.
        heard.append((records, len(list((tmp_path / "audio").iterdir()))))

    counts = export_build(build, tmp_path, on_written=on_written)

    assert counts["single_turn"] + counts["dialogue_turns"] == 4
    assert heard == [(n, n) for n in range(1, 5)]

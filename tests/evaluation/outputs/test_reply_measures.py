"""Reply WER and speaker similarity (issue 45): measured on real eSpeak NG speech by the audio job,
stored per output, filtered and sorted on the output measures page, summed per system on the
leaderboard with a t interval and n."""

from __future__ import annotations

import re

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.audio import rooms
from annotation.audio.speech import recognition
from annotation.audio.speech.objective import reply_measures
from annotation.audio.speech.recognition import spoken_wer, transcribe
from annotation.audio.synthesis import synthesize, to_wav_bytes
from evaluation.outputs.audio_metrics import JOB_KIND, output_figures, outputs_to_measure
from evaluation.outputs.models import ModelOutput, OutputAudioMetrics, System
from tests.annotation.audio.speech.espeak import spoken
from tests.factories import JudgeConfigFactory, JudgementFactory, ModelOutputFactory, stored_wav
from webapp.jobs import run_job
from webapp.lib.stats import mean_t_interval
from webapp.models import Job

pytestmark = pytest.mark.django_db
REPLY = "I am so sorry to hear that, it sounds like a really hard day for you."
OTHER = "The weather tomorrow will be cold and windy with rain in the north."
VOICE_SAMPLE = "Please call Stella and ask her to bring these things with her from the store."


def _wav(text: str, voice: str = "en-us") -> bytes:
    speech = synthesize(text, voice=voice)
    return to_wav_bytes(speech.samples, speech.sample_rate)


def test_a_reply_voiced_with_its_own_text_has_a_low_wer_and_another_text_a_high_one() -> None:
    own, _ = spoken(REPLY)
    other, _ = spoken(OTHER)
    right, wrong = spoken_wer(own, REPLY), spoken_wer(other, REPLY)
    assert right is not None and wrong is not None
    assert right < 0.35 < 0.8 < wrong
    assert spoken_wer(own, "...") is None  # a reply with no words has no WER


def test_a_reply_reads_the_same_whatever_was_recognised_before() -> None:
    # pocketsphinx's noise removal keeps its estimate from utterance to utterance unless the front
    # end is rebuilt: a reply's recognition would depend on the replies measured before it (the
    # words held here; the hypothesis' score, which decides near-ties, did not).
    own = rooms.mixed(spoken(REPLY)[0], rooms.fan(8.0, seed=1), 10.0)
    first = transcribe(own), recognition._RECOGNISER._decoder.hyp().score
    transcribe(rooms.mixed(spoken(OTHER)[0], rooms.white(6.0, seed=2), 0.0))

    assert (transcribe(own), recognition._RECOGNISER._decoder.hyp().score) == first


def test_the_same_voice_is_more_alike_to_the_reference_than_another_espeak_voice() -> None:
    reference, _ = spoken(VOICE_SAMPLE, voice="en-us")
    same, _ = spoken(REPLY, voice="en-us")
    other, _ = spoken(REPLY, voice="en-us+f3", pitch=70)
    same_figures = reply_measures(same, 16_000, REPLY, (reference, 16_000))
    other_figures = reply_measures(other, 16_000, REPLY, (reference, 16_000))
    assert same_figures["speaker_similarity"] > 0.75
    assert other_figures["speaker_similarity"] < same_figures["speaker_similarity"] - 0.1
    assert reply_measures(same, 16_000, REPLY, None)["speaker_similarity"] is None


def test_the_job_stores_wer_and_similarity_and_measures_again_after_a_new_reference(
    media_root, client_for, django_capture_on_commit_callbacks
) -> None:
    # given a system with a reference voice, a reply saying its text and one saying another
    system = System.objects.create(name="EchoChat", reference_voice_key=stored_wav(_wav(VOICE_SAMPLE), "ref"))
    right = ModelOutputFactory.create(
        system=system, response_text=REPLY, response_audio_key=stored_wav(_wav(REPLY), "output")
    )
    wrong = ModelOutputFactory.create(
        system=system, response_text=REPLY, response_audio_key=stored_wav(_wav(OTHER), "output")
    )
    admin = client_for("admin")

    with django_capture_on_commit_callbacks(execute=False):
        admin.post(reverse("evaluation:measure_audio"), {"version": "echoeval-v1"})
    run_job(Job.objects.filter(kind=JOB_KIND).latest("created_at").pk)

    right_row, wrong_row = (OutputAudioMetrics.objects.get(output=o) for o in (right, wrong))
    assert right_row.reply_wer is not None and wrong_row.reply_wer is not None
    assert right_row.reply_wer < 0.35 < 0.8 < wrong_row.reply_wer
    assert right_row.speaker_similarity is not None and right_row.speaker_similarity > 0.75
    assert right_row.reference_voice_key == system.reference_voice_key
    assert not outputs_to_measure("echoeval-v1").exists()
    # a new reference voice makes both rows stale: measured again
    System.objects.filter(pk=system.pk).update(
        reference_voice_key=stored_wav(_wav(VOICE_SAMPLE, "en-gb"), "ref")
    )
    assert set(outputs_to_measure("echoeval-v1")) == {right, wrong}


def test_an_admin_sets_a_reference_voice_on_the_system_page(media_root, client_for) -> None:
    system = System.objects.create(name="EchoChat")
    upload = SimpleUploadedFile("voice.wav", _wav(VOICE_SAMPLE), content_type="audio/wav")
    response = client_for("admin").post(
        reverse("evaluation:system_edit", args=[system.pk]),
        {"name": "EchoChat", "category": "general", "version": "", "reference_voice": upload},
    )
    assert response.status_code == 302
    system.refresh_from_db()
    assert system.reference_voice_key.startswith("audio/reference_voice/")
    refused = client_for("admin").post(
        reverse("evaluation:system_edit", args=[system.pk]),
        {
            "name": "EchoChat",
            "category": "general",
            "reference_voice": SimpleUploadedFile("x.wav", b"not audio", content_type="audio/wav"),
        },
    )
    assert refused.status_code == 200 and b"reference_voice" in refused.content


def _measured(
    system: System, wers: tuple[float | None, ...], similarities: tuple[float | None, ...]
) -> list[ModelOutput]:
    outputs = [ModelOutputFactory.create(system=system) for _ in wers]
    for output, wer, alike in zip(outputs, wers, similarities, strict=True):
        OutputAudioMetrics.objects.create(
            output=output, audio_key=output.response_audio_key, reply_wer=wer, speaker_similarity=alike
        )
    return outputs


def _table_rows(html: str) -> list[tuple[str, list[str]]]:
    table = re.search(r'data-testid="output-measures-table">(.*?)</table>', html, re.S)
    assert table is not None
    return [
        (system, re.findall(r'<td class="num">(.*?)</td>', row))
        for system, row in re.findall(
            r'<tr data-output="[^"]+" data-system="([^"]+)">(.*?)</tr>', table.group(1), re.S
        )
    ]


def test_the_output_measures_page_filters_and_sorts(client_for) -> None:
    echo, parrot = System.objects.create(name="EchoChat"), System.objects.create(name="Parrot")
    _measured(echo, (0.1, 0.5), (0.9, 0.7))
    _measured(parrot, (0.9, None), (0.6, None))
    admin = client_for("admin")
    url = reverse("evaluation:output_metrics")

    def wers(**query: str) -> list[str]:
        return [cells[4] for _, cells in _table_rows(admin.get(url, query).content.decode())]

    assert wers(sort="reply_wer") == ["0.10", "0.50", "0.90", "-"]  # unmeasured last
    assert wers(sort="-reply_wer") == ["0.90", "0.50", "0.10", "-"]
    assert wers(sort="reply_wer", metric="reply_wer", low="0.3") == ["0.50", "0.90"]
    assert wers(sort="reply_wer", system=str(echo.pk)) == ["0.10", "0.50"]
    html = admin.get(
        url, {"sort": "-speaker_similarity", "metric": "speaker_similarity", "high": "0.8"}
    ).content.decode()
    assert [(system, cells[5]) for system, cells in _table_rows(html)] == [
        ("EchoChat", "0.70"),
        ("Parrot", "0.60"),
    ]
    assert 'data-testid="output-count">2 outputs' in html
    # an unreadable bound is ignored, not an error page
    assert admin.get(url, {"metric": "reply_wer", "low": "x"}).status_code == 200
    assert [row.reply_wer for row in output_figures("echoeval-v1", sort="-reply_wer")][:1] == [0.9]


def test_the_leaderboard_shows_each_measure_with_its_interval_and_n(client_for) -> None:
    judge = JudgeConfigFactory.create(name="gpt-judge")
    system = System.objects.create(name="EchoChat")
    outputs = _measured(system, (0.1, 0.2, 0.6), (0.9, 0.8, None))
    for output in outputs:
        JudgementFactory.create(output=output, stage="response_audio", judge_config=judge, score=3.0)
    html = client_for("admin").get(reverse("evaluation:leaderboard"), {"judge": judge.pk}).content.decode()
    row = re.search(r'<tr data-measured-system="EchoChat">(.*?)</tr>', html, re.S)
    assert row is not None
    mean, t_low, high = mean_t_interval([0.1, 0.2, 0.6])
    assert t_low is not None and t_low < 0
    low = 0.0  # a WER is never below 0: the interval is clipped to the values it can take
    assert f"{mean:.2f}" in row.group(1) and f"[{low:.2f}, {high:.2f}]" in row.group(1)
    assert re.search(r'data-metric-n="3">0\.30<span[^>]*>\[', row.group(1))
    assert 'data-metric-n="2">0.85' in row.group(1)  # similarity measured on two of the three
    api = (
        client_for("admin").get("/api/leaderboard/", {"judge": judge.pk}).json()["objective_audio"]["rows"][0]
    )
    assert api["intervals"]["reply_wer"]["n"] == 3
    assert api["intervals"]["reply_wer"]["low"] == pytest.approx(low)


def test_the_t_interval_matches_scipy() -> None:
    from scipy import stats as scipy_stats

    from webapp.lib.stats import t_95

    for df in (1, 5, 9, 10, 17, 40, 250, 3000):
        assert t_95(df) == pytest.approx(float(scipy_stats.t.ppf(0.975, df)), abs=1e-3)
    values = list(np.random.default_rng(3).normal(0.3, 0.1, 25))
    _mean, low, high = mean_t_interval(values)
    expected = scipy_stats.t.interval(
        0.95, len(values) - 1, loc=np.mean(values), scale=scipy_stats.sem(values)
    )
    assert (low, high) == pytest.approx(expected, abs=1e-5)
    assert mean_t_interval([0.4]) == (0.4, None, None)


def test_the_item_drill_down_shows_each_outputs_measures(client_for) -> None:
    system = System.objects.create(name="EchoChat")
    [output] = _measured(system, (0.25,), (0.87,))
    html = client_for("admin").get(reverse("evaluation:item_detail", args=[output.item_id])).content.decode()
    measures = re.search(r'data-testid="output-measures">(.*?)</p>', html, re.S)
    assert measures is not None
    assert "Reply WER 0.25" in measures.group(1) and "Speaker similarity 0.87" in measures.group(1)

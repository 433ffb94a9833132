"""An inference job fails row by row, never as a whole: a generator emitting a NUL byte, lone
surrogates and a 1 MB answer, and one response the TTS cannot voice. Every other output is stored
and voiced; the odd texts are stored escaped (reversibly) and flagged; the unvoiceable row is that
row's error with its reason; the job finishes with errors. Run on SQLite and on PostgreSQL."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from evaluation.outputs.models import ModelOutput
from ml.core.answers import InferenceOutput
from ml.jobs import inference
from tests.factories import ItemFactory
from webapp.jobs import JobReporter, ended
from webapp.lib.output_format import parse_output, render_output, render_strategy
from webapp.lib.stored_text import unescape
from webapp.models import Job, JobStatus
from webapp.storage import read_media

pytestmark = pytest.mark.usefixtures("media_root")
NUL = "I hear you\x00, truly."
SURROGATES = "Lone \ud800 and \udfff halves."
HUGE = "word " * 200_000  # 1 MB
UNSPEAKABLE = "This one the TTS refuses."


def _answer(perception: str, response: str) -> str:
    return render_output(perception, "Context: alone", render_strategy(["Reassurance"], "calm"), response)


ANSWERS = {
    "EE-0": _answer("Sad.", "I am here with you."),
    "EE-1": _answer("Sad.", NUL),
    "EE-2": _answer(SURROGATES, SURROGATES),
    "EE-3": _answer("Tired.", HUGE),
    "EE-4": _answer("Calm.", UNSPEAKABLE),
}


def _synthesize(text: str, style: str) -> tuple[np.ndarray, int]:
    assert "\x00" not in text and not any(0xD800 <= ord(char) <= 0xDFFF for char in text)
    if text == UNSPEAKABLE:
        raise RuntimeError("the speech server answered 500")
    return np.zeros(1600, dtype=np.int16), 16_000


def _generator(monkeypatch: Any) -> None:
    """Stand in for the checkpoint: the five answers above, and no model to load."""
    model = SimpleNamespace(
        start=SimpleNamespace(speech_lm=None), uri="stub", checkpoint=None, device="cpu", dtype="float32"
    )
    model.version = lambda: "stub"
    monkeypatch.setattr(inference, "job_snapshot", lambda job: SimpleNamespace(pk=1))
    monkeypatch.setattr(inference, "snapshot_records", lambda snapshot: [])
    monkeypatch.setattr(inference, "inference_items", lambda rows: list(ANSWERS))
    monkeypatch.setattr(inference, "load_answering_model", lambda parameters, reporter: model)
    monkeypatch.setattr(
        inference,
        "run_inference",
        lambda *args, **kwargs: [
            InferenceOutput(item_id, text, parse_output(text)) for item_id, text in ANSWERS.items()
        ],
    )
    monkeypatch.setattr(inference, "configured_synthesizer", lambda: _synthesize)


def test_odd_outputs_are_stored_escaped_and_one_unvoiceable_row_does_not_sink_the_job(
    db, monkeypatch, settings
) -> None:
    # given five items and a generator whose answers hold a NUL, lone surrogates, 1 MB, and one the
    # TTS refuses
    settings.TTS_BACKEND = "espeak"
    for item_id in ANSWERS:
        ItemFactory.create(external_id=item_id)
    _generator(monkeypatch)
    job = Job.objects.create(kind="inference", parameters={"system_name": "EchoChat rows"})

    # when the job runs
    result = inference.run_inference_job(job, JobReporter(job))
    assert result is not None

    # then it finished with errors: one of five rows failed, with its reason
    status, error, message = ended(result)
    assert (status, error) == (JobStatus.FINISHED_WITH_ERRORS, "")
    assert message == "Finished with errors: 1 of 5 outputs failed (20%)"
    [row_error] = result["row_errors"]
    assert row_error.startswith("EE-4: could not be voiced (RuntimeError: the speech server answered 500)")

    # and every other output is stored and voiced, the odd texts escaped reversibly and flagged
    stored = {
        output.item.external_id: output
        for output in ModelOutput.objects.filter(system__name="EchoChat rows").select_related("item")
    }
    assert sorted(stored) == ["EE-0", "EE-1", "EE-2", "EE-3"]
    for item_id, output in stored.items():
        assert unescape(output.raw_text) == ANSWERS[item_id]
        assert unescape(output.response_text) == parse_output(ANSWERS[item_id]).span_text("response")
        assert read_media(output.response_audio_key).startswith(b"RIFF")
    assert unescape(stored["EE-2"].perception_text) == SURROGATES
    assert {item_id: output.escaped_characters for item_id, output in stored.items()} == {
        "EE-0": "",
        "EE-1": "1 NUL character",
        "EE-2": "4 lone surrogates",
        "EE-3": "",
    }
    assert stored["EE-0"].raw_text == ANSWERS["EE-0"]  # text without odd characters is left as it is
    # and the flag names the database in use, never another
    backend = "PostgreSQL" if settings.DATABASES["default"]["ENGINE"].endswith("postgresql") else "SQLite"
    other = {"PostgreSQL": "SQLite", "SQLite": "PostgreSQL"}[backend]
    escaped = " ".join(result["escaped"])
    assert f"here {backend}" in escaped and other not in escaped

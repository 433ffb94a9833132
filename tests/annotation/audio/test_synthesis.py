import io
import subprocess
import sys
import wave
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np
import pytest

from annotation.audio.acoustics import analyze
from annotation.audio.synthesis import SynthesizedSpeech, ssml_markup, synthesize, to_wav_bytes

ROOT = Path(__file__).resolve().parents[3]
LINE = "Please take your time, I am listening."


def test_synthesis_returns_16_bit_samples_at_the_engine_rate() -> None:
    speech = synthesize(LINE)

    assert speech.samples.dtype == np.int16
    assert speech.sample_rate == 22_050  # eSpeak NG's fixed output rate
    assert 1.0 < speech.duration_seconds < 5.0
    assert np.max(np.abs(speech.samples)) > 3000  # audible, not an empty buffer


def test_repeated_calls_give_the_same_utterance_sample_for_sample() -> None:
    # (eSpeak NG's wave generator keeps its phase and echo in C statics: without a fresh library
    # each call, lengths differed by up to 15 ms and the waveforms by more than their own power)
    first, second = synthesize(LINE), synthesize(LINE)

    assert np.array_equal(first.samples, second.samples)


def test_a_text_reads_the_same_whatever_the_process_spoke_before() -> None:
    script = (
        "import sys, hashlib\n"
        "from annotation.audio.synthesis import synthesize\n"
        "for voice in sys.argv[1:]:\n"
        "    synthesize('Something else first, with a breath in it.', voice=voice, pitch=80)\n"
        "print(hashlib.sha256(synthesize('The office is closed today', pitch=5).samples.tobytes()).hexdigest())\n"
    )
    readings = {
        subprocess.run(
            [sys.executable, "-c", script, *before], capture_output=True, text=True, check=True, cwd=ROOT
        ).stdout
        for before in ([], ["en-us"], ["en+croak", "en-gb+f4"])
    }

    assert len(readings) == 1


def test_concurrent_calls_do_not_mix_their_audio() -> None:
    texts = [LINE, "Good morning.", LINE, "Good morning."]
    expected = [synthesize(text).samples for text in texts]

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(synthesize, texts))

    # Shared buffers would hand one caller two utterances and another none.
    assert all(np.array_equal(r.samples, e) for r, e in zip(results, expected, strict=True))


def test_faster_rate_is_shorter() -> None:
    assert (
        synthesize(LINE, rate_wpm=300).duration_seconds
        < 0.7 * synthesize(LINE, rate_wpm=150).duration_seconds
    )


def test_settings_do_not_leak_into_the_next_call() -> None:
    plain = synthesize(LINE)
    synthesize(LINE, rate_wpm=400, pitch=90, voice="en-gb")

    again = synthesize(LINE)

    assert np.array_equal(again.samples, plain.samples)


def median_f0(speech: SynthesizedSpeech) -> float | None:
    return analyze(speech.samples, speech.sample_rate).median_f0_hz


def test_voice_by_language_code() -> None:
    assert synthesize("Bonjour.", voice="fr").duration_seconds > 0.2


@pytest.mark.parametrize(
    "voice_settings",
    [{"rate_wpm": 20}, {"rate_wpm": 1000}, {"pitch": -1}, {"pitch": 101}, {"voice": "xx-none"}],
)
def test_out_of_range_voice_settings_are_refused(voice_settings: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        synthesize(LINE, **voice_settings)  # type: ignore[arg-type]


def test_wav_bytes_round_trip() -> None:
    speech = synthesize("Yes.")

    with wave.open(io.BytesIO(to_wav_bytes(speech.samples, speech.sample_rate))) as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (1, 2, 22_050)
        decoded = np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")
    np.testing.assert_array_equal(decoded, speech.samples)


def test_emphasis_markup_stresses_one_script_word_and_escapes_the_rest() -> None:
    text = "Tom & I can't <stop> waiting, Tom. I said 'no'."
    assert ssml_markup(text, "tom") == (
        '<speak><emphasis level="strong">Tom</emphasis> &amp; I can\'t &lt;stop&gt; waiting, Tom. '
        "I said 'no'.</speak>",
        True,
    )
    # words as scripts count them: "can't" is one word, a quoted 'no' is a word
    assert ssml_markup(text, "can") == (f"<speak>{escape(text)}</speak>", False)
    assert ssml_markup(text, "can't")[1] and ssml_markup(text, "no")[1]
    assert ssml_markup(text, "") == (f"<speak>{escape(text)}</speak>", False)


def test_an_emphasised_word_is_drawn_out() -> None:
    plain, _ = ssml_markup(LINE)
    stressed, _ = ssml_markup(LINE, "take")
    # Against the same SSML reading: emphasis lengthens the word (about 50 ms here); eSpeak NG
    # varies a reading by a few samples from call to call.
    gained = synthesize(stressed, ssml=True).duration_seconds - synthesize(plain, ssml=True).duration_seconds
    assert gained > 0.03


@pytest.mark.parametrize("rate_wpm", [100, 175, 300])
def test_an_ssml_reading_ends_as_a_plain_one(rate_wpm: int) -> None:
    # SSML mode's closing pause is cut back, so durations and means over the file compare
    plain = synthesize("No.", rate_wpm=rate_wpm)
    marked = synthesize(ssml_markup("No.")[0], ssml=True, rate_wpm=rate_wpm)
    assert abs(marked.duration_seconds - plain.duration_seconds) < 0.05  # the pause is 0.1-0.5 s


def test_a_variant_on_a_language_code_speaks_as_on_a_voice_name() -> None:
    male = median_f0(synthesize(LINE, voice="en-gb"))
    british, american = (median_f0(synthesize(LINE, voice=voice)) for voice in ("en-gb+f2", "en-us+f2"))
    assert male is not None and british is not None and american is not None
    assert british > 1.5 * male
    assert british == pytest.approx(american, rel=0.1)  # f2 sets the pitch, whatever the language

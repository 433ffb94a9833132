"""Reply WER and speaker similarity on eSpeak NG replies (issue 45): how far apart a reply saying its
own text and one saying another text are, the same voice and other voices, and the cost per reply.

    python bench/reply_measures.py

Replies: SENTENCES read by eSpeak NG in VOICES; each voice's reference is another sentence in the
same voice (`REFERENCE`). WER: each reply against its own text and against the next sentence's.
Similarity: each reply against the en-us reference (its own voice for en-us, another for the rest).
Prints the figures and the seconds per reply of ASR and of the speaker embedding, with the load.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotation.audio.speech.recognition import spoken_wer
from annotation.audio.speech.resampling import at_speech_rate
from annotation.audio.speech.speaker import similarity, speaker_embedding
from annotation.audio.synthesis import synthesize

SENTENCES = (
    "I am so sorry to hear that, it sounds like a really hard day for you.",
    "That is wonderful news, you must be so proud of yourself.",
    "It makes sense to feel nervous before a big interview like that.",
    "Would you like to talk about what happened at work today?",
    "Take a deep breath, we can go through it one step at a time.",
)
REFERENCE = "Please call Stella and ask her to bring these things with her from the store."
VOICES = ("en-us", "en-gb", "en-us+f3", "en-us+m3")


def speech(text: str, voice: str) -> npt.NDArray[np.float64]:
    spoken = synthesize(text, voice=voice)
    return at_speech_rate(spoken.samples / 32768.0, spoken.sample_rate)


def main() -> None:
    own: list[float] = []
    other: list[float] = []
    asr_seconds: list[float] = []
    embed_seconds: list[float] = []
    for index, text in enumerate(SENTENCES):
        samples = speech(text, "en-us")
        start = time.perf_counter()
        own.append(spoken_wer(samples, text) or 0.0)
        asr_seconds.append(time.perf_counter() - start)
        other.append(spoken_wer(samples, SENTENCES[(index + 1) % len(SENTENCES)]) or 0.0)
    reference = speaker_embedding(speech(REFERENCE, "en-us"))
    alike: dict[str, list[float]] = {}
    for voice in VOICES:
        for text in SENTENCES:
            samples = speech(text, voice)
            start = time.perf_counter()
            embedding = speaker_embedding(samples)
            embed_seconds.append(time.perf_counter() - start)
            alike.setdefault(voice, []).append(similarity(embedding, reference))
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(f"WER, own text: mean {statistics.fmean(own):.3f} (max {max(own):.3f}), n={len(own)}")
    print(f"WER, another text: mean {statistics.fmean(other):.3f} (min {min(other):.3f}), n={len(other)}")
    for voice, values in alike.items():
        print(
            f"similarity to the en-us reference, {voice}: {statistics.fmean(values):.3f} (range {min(values):.3f}-{max(values):.3f})"
        )
    print(
        f"seconds per reply: ASR {statistics.median(asr_seconds[1:]):.2f}, embedding {statistics.median(embed_seconds[1:]):.2f} (median, first call's model load left out)"
    )


if __name__ == "__main__":
    main()

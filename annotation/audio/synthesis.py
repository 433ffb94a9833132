"""Synthetic speech from eSpeak NG, for test fixtures, benchmarks and demo data.

The `espeakng-loader` wheel ships the eSpeak NG shared library and its voice data, so this works
on any machine with the project's requirements and no system packages. The library is driven
through ctypes in synchronous mode: `espeak_Synth` returns only after every audio buffer has been
handed to our callback, which makes a call a plain function from text to samples.
"""

from __future__ import annotations

import _ctypes
import ctypes
import io
import threading
import wave
from dataclasses import dataclass
from xml.sax.saxutils import escape

import espeakng_loader
import numpy as np
import numpy.typing as npt

from annotation.audio.acoustics import WORD

# Values from eSpeak NG's speak_lib.h.
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_INITIALIZE_DONT_EXIT = 0x8000  # return an error instead of calling exit() when data is missing
_CHARS_UTF8 = 1
_SSML = 0x10  # the text is SSML markup (<emphasis>, <break>, ...)
_POS_CHARACTER = 1
_PARAM_RATE = 1
_PARAM_PITCH = 3
_EE_OK = 0

MIN_RATE_WPM = 80
MAX_RATE_WPM = 450

_INITIALIZE_PHONEME_EVENTS = 0x0001  # also report each phoneme's start (for `synthesize_timed`)
_EVENT_LIST_TERMINATED = 0
_EVENT_WORD = 1
_EVENT_PHONEME = 7


class _EventId(ctypes.Union):
    _fields_ = [("number", ctypes.c_int), ("name", ctypes.c_char_p), ("string", ctypes.c_char * 8)]


class _Event(ctypes.Structure):
    """espeak_EVENT: `audio_position` is in milliseconds from the start of the text's audio."""

    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", _EventId),
    ]


# int callback(short *wav, int numsamples, espeak_EVENT *events): events end with LIST_TERMINATED.
_SynthCallback = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event)
)


class _VoiceSpec(ctypes.Structure):
    """espeak_VOICE, used to rank the voices of a language code ("en-gb") when no voice has that name."""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("languages", ctypes.c_char_p),
        ("identifier", ctypes.c_char_p),
        ("gender", ctypes.c_ubyte),
        ("age", ctypes.c_ubyte),
        ("variant", ctypes.c_ubyte),
        ("xx1", ctypes.c_ubyte),
        ("score", ctypes.c_int),
        ("spare", ctypes.c_void_p),
    ]


@dataclass(frozen=True)
class TimedWord:
    """A word as eSpeak NG spoke it: its text, its start in seconds, and its phonemes' starts."""

    text: str
    start: float
    phoneme_starts: tuple[float, ...]


@dataclass(frozen=True)
class SynthesizedSpeech:
    samples: npt.NDArray[np.int16]
    sample_rate: int
    words: tuple[TimedWord, ...] = ()

    @property
    def duration_seconds(self) -> float:
        """Return the length of the speech in seconds."""
        return len(self.samples) / self.sample_rate


class _Engine:
    """The one eSpeak NG instance of this process.

    eSpeak NG keeps its voice, parameters and output buffer in C globals, so every synthesis
    runs under one lock, and the callback appends to a buffer that only the lock holder uses.

    Its wave generator also keeps state in C statics that run on from one call to the next (the
    glottal phase, pitch flutter, the echo buffer) and that `espeak_Initialize` does not reset: the
    same text came out with a different waveform after any other synthesis, so what a test or a
    data build read depended on what the process had spoken before. Each call therefore loads the
    library, speaks, and unloads it (about 4 ms a call with the load; measured in
    docs/benchmarks.md), and a text reads the same, sample for sample, in any process.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._library: ctypes.CDLL | None = None
        self._sample_rate = 0
        self._chunks: list[npt.NDArray[np.int16]] = []
        self._events: list[tuple[int, int, int, int, bytes]] = []
        # Kept on the instance so the C side never calls a garbage-collected trampoline.
        self._callback = _SynthCallback(self._collect)

    def _collect(
        self, wav: ctypes._Pointer[ctypes.c_short], numsamples: int, events: ctypes._Pointer[_Event]
    ) -> int:
        if numsamples > 0 and wav:
            self._chunks.append(np.ctypeslib.as_array(wav, shape=(numsamples,)).astype(np.int16))
        index = 0
        while events and events[index].type != _EVENT_LIST_TERMINATED:
            event = events[index]
            if event.type in (_EVENT_WORD, _EVENT_PHONEME):
                self._events.append(
                    (event.type, event.text_position, event.length, event.audio_position, event.id.string)
                )
            index += 1
        return 0  # 0 = carry on synthesising

    def _start(self) -> ctypes.CDLL:
        if self._library is not None:
            return self._library
        library = ctypes.CDLL(espeakng_loader.get_library_path())
        library.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        library.espeak_Initialize.restype = ctypes.c_int
        library.espeak_SetSynthCallback.argtypes = [_SynthCallback]
        library.espeak_SetSynthCallback.restype = None
        library.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        library.espeak_SetVoiceByName.restype = ctypes.c_int
        library.espeak_ListVoices.argtypes = [ctypes.POINTER(_VoiceSpec)]
        library.espeak_ListVoices.restype = ctypes.POINTER(ctypes.POINTER(_VoiceSpec))
        library.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        library.espeak_SetParameter.restype = ctypes.c_int
        library.espeak_Synth.argtypes = [
            ctypes.c_char_p,
            ctypes.c_size_t,
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint,
            ctypes.POINTER(ctypes.c_uint),
            ctypes.c_void_p,
        ]
        library.espeak_Synth.restype = ctypes.c_int
        data_path = espeakng_loader.get_data_path().encode()
        sample_rate = library.espeak_Initialize(
            _AUDIO_OUTPUT_SYNCHRONOUS, 0, data_path, _INITIALIZE_DONT_EXIT | _INITIALIZE_PHONEME_EVENTS
        )
        if sample_rate <= 0:
            raise RuntimeError(f"eSpeak NG failed to initialise with data at {data_path.decode()}")
        library.espeak_SetSynthCallback(self._callback)
        library.espeak_ng_SetRandSeed.argtypes = [ctypes.c_long]
        library.espeak_ng_SetRandSeed.restype = None
        library.espeak_TextToPhonemes.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_int]
        library.espeak_TextToPhonemes.restype = ctypes.c_char_p
        self._sample_rate = sample_rate
        self._library = library
        return library

    def _unload(self) -> None:
        """Free eSpeak NG and unload its library, so the next call starts from its pristine statics."""
        if self._library is None:
            return
        self._library.espeak_Terminate()
        _ctypes.dlclose(self._library._handle)
        self._library = None

    def _set_voice(self, library: ctypes.CDLL, voice: str) -> None:
        """Select `voice`: a voice name or file ("en-us", "gmw/en") or a language code ("en-gb"),
        each with an optional "+variant" ("en-gb+f2").

        eSpeak NG takes a variant only by name: `espeak_SetVoiceByName("en-gb+f2")` fails (no voice
        file is called en-gb; British English is gmw/en), and selecting by language drops the
        variant, so "en-gb+f2" spoke as the male en-gb. A language code is resolved to its best
        voice's file first (`espeak_ListVoices`, as eSpeak NG ranks them), then named with the
        variant ("gmw/en+f2")."""
        if library.espeak_SetVoiceByName(voice.encode()) == _EE_OK:
            return
        language, plus, variant = voice.partition("+")
        ranked = library.espeak_ListVoices(ctypes.byref(_VoiceSpec(languages=language.encode())))
        index = 0
        while language and ranked and ranked[index]:
            identifier = ranked[index].contents.identifier.decode()
            index += 1
            if identifier.startswith("!v/"):  # a variant file, not a language's voice
                continue
            if library.espeak_SetVoiceByName(f"{identifier}{plus}{variant}".encode()) == _EE_OK:
                return
            break
        raise ValueError(f"eSpeak NG has no voice named {voice!r}")

    def synthesize(self, text: str, rate_wpm: int, pitch: int, voice: str, ssml: bool) -> SynthesizedSpeech:
        with self._lock:
            library = self._start()
            self._chunks, self._events = [], []
            try:
                self._set_voice(library, voice)
                # Breathy voices' noise comes from eSpeak NG's own random numbers, seeded from the
                # clock unless set.
                library.espeak_ng_SetRandSeed(0)
                # Set after the voice, because loading a voice resets the prosody parameters.
                library.espeak_SetParameter(_PARAM_RATE, rate_wpm, 0)
                library.espeak_SetParameter(_PARAM_PITCH, pitch, 0)
                encoded = text.encode()
                status = library.espeak_Synth(
                    encoded,
                    len(encoded) + 1,
                    0,
                    _POS_CHARACTER,
                    0,
                    _CHARS_UTF8 | (_SSML if ssml else 0),
                    None,
                    None,
                )
                if status != _EE_OK:
                    raise RuntimeError(f"eSpeak NG synthesis failed with status {status}")
                samples = np.concatenate(self._chunks) if self._chunks else np.zeros(0, dtype=np.int16)
                if ssml:
                    samples = _without_trailing_pause(samples, self._sample_rate)
                words = () if ssml else _timed_words(text, self._events)
            finally:
                self._chunks, self._events = [], []
                self._unload()
            return SynthesizedSpeech(samples=samples, sample_rate=self._sample_rate, words=words)

    def phonemes(self, text: str, voice: str) -> str:
        """Return eSpeak NG's phoneme mnemonics for `text`, clause by clause, joined by spaces."""
        with self._lock:
            library = self._start()
            try:
                self._set_voice(library, voice)
                remaining = ctypes.c_char_p(text.encode())
                clauses = []
                # One clause per call; eSpeak NG moves the pointer on and sets it to NULL at the end.
                while remaining.value:
                    spelled = library.espeak_TextToPhonemes(ctypes.byref(remaining), _CHARS_UTF8, 0)
                    clauses.append((spelled or b"").decode())
            finally:
                self._unload()
            return " ".join(clause.strip() for clause in clauses if clause.strip())


def _timed_words(text: str, events: list[tuple[int, int, int, int, bytes]]) -> tuple[TimedWord, ...]:
    """Group eSpeak's word and phoneme events into words (pauses, written "_", are no phonemes)."""
    encoded = text.encode()
    words: list[tuple[str, float, list[float]]] = []
    for kind, position, length, milliseconds, name in events:
        if kind == _EVENT_WORD:
            spoken = encoded[position - 1 : position - 1 + length].decode(errors="replace")
            words.append((spoken, milliseconds / 1000, []))
        elif words and name and not name.startswith(b"_"):
            words[-1][2].append(milliseconds / 1000)
    return tuple(TimedWord(text=w, start=start, phoneme_starts=tuple(p)) for w, start, p in words)


_ENGINE = _Engine()


def synthesize(
    text: str, *, rate_wpm: int = 175, pitch: int = 50, voice: str = "en-us", ssml: bool = False
) -> SynthesizedSpeech:
    """Return `text` spoken by eSpeak NG at `rate_wpm` words per minute and `pitch` (0-100).

    With `ssml`, `text` is SSML markup, as `ssml_markup` writes it."""
    if not MIN_RATE_WPM <= rate_wpm <= MAX_RATE_WPM:
        raise ValueError(f"rate_wpm must be between {MIN_RATE_WPM} and {MAX_RATE_WPM}, got {rate_wpm}")
    if not 0 <= pitch <= 100:
        raise ValueError(f"pitch must be between 0 and 100, got {pitch}")
    return _ENGINE.synthesize(text, rate_wpm, pitch, voice, ssml)


def phonemes(text: str, *, voice: str = "en-us") -> str:
    """Return how eSpeak NG would say `text`, in its phoneme mnemonics ("glutton" -> "gl'V?n-"):
    its letter-to-sound rules and dictionary, for words another dictionary lacks."""
    return _ENGINE.phonemes(text, voice)


# SSML mode ends a reading with a clause pause (0.1-0.5 s by rate) that a plain reading does not
# have; cut back to what a plain reading keeps after its last sound, so the two compare like with
# like (a mean over the file, a duration) and only the markup's own effect differs.
PLAIN_TAIL_SECONDS = 0.007


def _without_trailing_pause(samples: npt.NDArray[np.int16], sample_rate: int) -> npt.NDArray[np.int16]:
    sounding = np.flatnonzero(samples)
    if not sounding.size:
        return samples
    return samples[: min(len(samples), int(sounding[-1]) + 1 + round(PLAIN_TAIL_SECONDS * sample_rate))]


def ssml_markup(text: str, stressed_word: str = "") -> tuple[str, bool]:
    """Return SSML speaking `text` (escaped) with its first word equal to `stressed_word` (any case)
    stressed, and whether one was: words as scripts count them (`acoustics.WORD`)."""
    wanted = stressed_word.lower()
    match = next((m for m in WORD.finditer(text) if m.group().lower() == wanted), None) if wanted else None
    if match is None:
        return f"<speak>{escape(text)}</speak>", False
    before, stressed, after = text[: match.start()], match.group(), text[match.end() :]
    return (
        f'<speak>{escape(before)}<emphasis level="strong">{escape(stressed)}</emphasis>{escape(after)}</speak>',
        True,
    )


def to_wav_bytes(samples: npt.NDArray[np.int16], sample_rate: int) -> bytes:
    """Return mono 16-bit PCM `samples` as the bytes of a WAV file."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(sample_rate)
        wav.writeframes(np.asarray(samples, dtype="<i2").tobytes())
    return buffer.getvalue()

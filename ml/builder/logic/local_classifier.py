"""The emotion-consistency check by a local audio-classification model (the paper's emotion2vec or
WavLM classifiers, fine-tuned and saved with transformers' `save_pretrained`).

`consistency_method: "local"` with `consistency_model_path` (a folder on the worker: the model's
config, weights and feature extractor) runs it on the worker's CPU or GPU; nothing is downloaded.
Its labels are matched to the studio's emotions through the same spellings the item import accepts
("hap", "happiness", "joy" -> happy), so models trained on IEMOCAP-style label sets plug in.
"""

from __future__ import annotations

import io
import threading
import wave
from pathlib import Path
from typing import Any

import numpy as np

from ml.builder.logic.consistency import ConsistencyVerdict
from webapp.lib.vocabulary import EMOTIONS

# Label spellings of common speech-emotion models, mapped to the studio's emotions.
LABEL_SPELLINGS = {
    "hap": "happy",
    "happiness": "happy",
    "joy": "happy",
    "exc": "happy",
    "excited": "happy",
    "sadness": "sad",
    "ang": "angry",
    "anger": "angry",
    "fru": "angry",
    "neu": "neutral",
    "calm": "neutral",
    "fea": "fear",
    "fearful": "fear",
    "dis": "disgust",
    "disgusted": "disgust",
    "sur": "surprise",
    "surprised": "surprise",
}


def studio_emotion(label: str) -> str:
    """Return the studio's emotion for a model's label ("" when it names none of them)."""
    spelled = label.strip().lower()
    emotion = LABEL_SPELLINGS.get(spelled, spelled)
    return emotion if emotion in EMOTIONS else ""


def wav_samples(wav: bytes) -> tuple[np.ndarray, int]:
    """Return mono float32 samples in [-1, 1] and the rate of 16-bit PCM WAV bytes."""
    with wave.open(io.BytesIO(wav)) as reader:
        rate, channels = reader.getframerate(), reader.getnchannels()
        pcm = np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2").astype(np.float32) / 32768.0
    return (pcm.reshape(-1, channels).mean(axis=1) if channels > 1 else pcm), rate


class LocalModelClassifier:
    """An audio-classification model loaded once from a local folder, shared by a job's threads."""

    def __init__(self, path: str | Path, device: str | None = None) -> None:
        # Imported here: loading torch and transformers is a worker's business, never the web's.
        import torch
        from transformers import AutoFeatureExtractor, AutoModelForAudioClassification

        folder = Path(path)
        if not (folder / "config.json").is_file():
            raise FileNotFoundError(f"{folder} holds no model (config.json is missing)")
        self._torch = torch
        self.extractor: Any = AutoFeatureExtractor.from_pretrained(folder, local_files_only=True)
        self.model: Any = AutoModelForAudioClassification.from_pretrained(folder, local_files_only=True)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device).eval()
        self.method = f"local-model:{folder.name}"
        self.labels = {int(index): str(label) for index, label in self.model.config.id2label.items()}
        self._lock = threading.Lock()  # one forward pass at a time: the model is not re-entrant

    def verdict(self, wav: bytes, emotion: str) -> ConsistencyVerdict:
        """Return the model's emotion and its probability for the audio, compared with the target."""
        samples, rate = wav_samples(wav)
        target_rate = int(self.extractor.sampling_rate)
        if rate != target_rate:
            from scipy.signal import resample_poly  # imported here: the web app never loads scipy

            divisor = np.gcd(rate, target_rate)
            samples = resample_poly(samples, target_rate // divisor, rate // divisor).astype(np.float32)
        inputs = self.extractor(samples, sampling_rate=target_rate, return_tensors="pt")
        with self._lock, self._torch.no_grad():
            logits = self.model(**{name: value.to(self.device) for name, value in inputs.items()}).logits[0]
        probabilities = self._torch.softmax(logits.float(), dim=-1).cpu().numpy()
        scores: dict[str, float] = {}
        for index, probability in enumerate(probabilities):
            mapped = studio_emotion(self.labels.get(index, ""))
            if mapped:
                scores[mapped] = scores.get(mapped, 0.0) + float(probability)
        if not scores:
            return ConsistencyVerdict(self.method, emotion, "", 0.0, False, {})
        predicted = max(scores, key=lambda name: scores[name])
        confidence = round(scores[predicted], 3)
        rounded = {name: round(value, 3) for name, value in scores.items()}
        return ConsistencyVerdict(self.method, emotion, predicted, confidence, predicted == emotion, rounded)

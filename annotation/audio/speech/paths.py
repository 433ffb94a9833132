"""Where each model's weights come from: the copy inside its wheel, or a lab's own by path.

One environment variable per model; unset means the wheel's model. Read when a model first
loads (once per worker process), so a worker restart picks up a change.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

# The lab's own models, by path (the same file formats as the wheels' models).
ACOUSTIC_MODEL_ENV = "ECHOSTUDIO_ALIGNER_MODEL_DIR"  # a pocketsphinx/CMU Sphinx acoustic model folder
DICTIONARY_ENV = "ECHOSTUDIO_ALIGNER_DICTIONARY"  # a CMU-style pronunciation dictionary
PHONE_LM_ENV = "ECHOSTUDIO_ALIGNER_PHONE_LM"  # the free phone loop's phone n-gram (script check)
LANGUAGE_MODEL_ENV = "ECHOSTUDIO_ASR_LANGUAGE_MODEL"  # free ASR's word n-gram (reply WER)
VAD_MODEL_ENV = "ECHOSTUDIO_VAD_MODEL"  # a silero-vad ONNX file (16 kHz, 512-sample windows)
DNSMOS_MODEL_ENV = "ECHOSTUDIO_DNSMOS_MODEL"  # DNSMOS P.835 ONNX (sig_bak_ovr.onnx)
P808_MODEL_ENV = "ECHOSTUDIO_DNSMOS_P808_MODEL"  # DNSMOS P.808 ONNX (model_v8.onnx)
SPEAKER_MODEL_ENV = "ECHOSTUDIO_SPEAKER_MODEL"  # Resemblyzer encoder weights (pretrained.pt)


def package_dir(package: str) -> Path:
    """Return the folder of an installed package without importing it (some import heavy extras)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"the {package} package is not installed (see requirements-speech.txt)")
    return Path(next(iter(spec.submodule_search_locations)))


def model_path(env: str, default: Path) -> Path:
    """Return the lab's model named by `env`, else `default`; fail loudly when it does not exist."""
    chosen = Path(os.environ[env]) if os.environ.get(env) else default
    if not chosen.exists():
        raise FileNotFoundError(f"{env}: no model at {chosen}")
    return chosen

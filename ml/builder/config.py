"""A build's configuration, checked once when the build is made: endpoints, coverage, thresholds.

Stored as ``Build.config`` (JSON) and read back with ``BuildConfig.from_json`` by every stage job,
so a worker never runs with settings the admin did not see. Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, Field, asdict, dataclass, field, fields
from typing import Any

from ml.builder.stages import PROMPT_VARIANTS
from webapp.lib.outbound import JUDGE_KEY_ENV_PREFIX, key_variable_problem
from webapp.lib.url_shape import web_url_problem
from webapp.lib.vocabulary import EMOTIONS, INTENSITIES, NEUTRAL

# The paper's six basic emotions (appendix B): neutral is not a target of generated queries.
BUILD_EMOTIONS: tuple[str, ...] = tuple(emotion for emotion in EMOTIONS if emotion != NEUTRAL)


OPENAI_VOICES: tuple[str, ...] = ("alloy", "echo", "fable", "onyx", "nova", "shimmer")


class ConfigProblem(ValueError):
    """A build configuration that cannot run, with the reason in words."""


@dataclass(frozen=True)
class Endpoint:
    """One OpenAI-compatible chat endpoint and model; several may be listed and are mixed."""

    base_url: str
    model: str
    api_key_env: str = ""  # an ECHOSTUDIO_JUDGE_KEY_* variable, never the key itself
    max_concurrency: int = 4
    max_retries: int = 3
    timeout_s: float = 60.0


CONSISTENCY_METHODS = ("acoustic", "endpoint", "local")


@dataclass(frozen=True)
class BuildConfig:
    endpoints: tuple[Endpoint, ...]
    emotions: tuple[str, ...] = BUILD_EMOTIONS
    intensities: tuple[str, ...] = INTENSITIES
    variants: tuple[str, ...] = PROMPT_VARIANTS
    # The LLM filters score each criterion 1-5; a sample is kept when every criterion reaches this.
    query_min_score: int = 3
    response_min_score: int = 3
    # The emotion-consistency check keeps a sample only when it is consistent with this confidence.
    consistency_min_confidence: float = 0.5
    # "acoustic" (offline, weaker), "endpoint" (an audio chat endpoint) or "local" (a transformers
    # audio-classification model in a folder on the workers, `consistency_model_path`).
    consistency_method: str = "acoustic"
    # A second check for the paper's joint rule (B.2: two classifiers must agree, confidently): ""
    # (none), or another of the methods above; both must hear the target with the confidence.
    consistency_joint_method: str = ""
    consistency_endpoint: Endpoint | None = None
    consistency_model_path: str = ""
    tts_backend: str = "espeak"
    tts_base_url: str = ""
    tts_model: str = "tts-1"
    # The speech server takes a reference voice (JSON "reference_audio", a base64 WAV, with its
    # "reference_text"): dialogue turns 2-5 are then voiced with the previous turn's audio as the
    # speaker prompt, so a session keeps one voice (paper B.5). Off for servers without it, which
    # are sent no prompt; eSpeak NG has no reference voice.
    tts_speaker_prompt: bool = False
    voices: tuple[str, ...] = ("en-us", "en-gb", "en-us+f3", "en-us+m3", "en-gb+f2")
    batch_size: int = 25  # samples (or dialogues) claimed at once by one stage job
    shards: int = 1  # stage jobs run side by side per stage (one per worker you want busy)
    audio_threads: int = 2
    spot_check_rate: float = 0.02
    temperature: float = 0.7
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Return the configuration as plain JSON values (for ``Build.config``)."""
        values = asdict(self)
        return {key: list(value) if isinstance(value, tuple) else value for key, value in values.items()}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> BuildConfig:
        """Return the checked configuration; raise ConfigProblem naming the first thing wrong."""
        known = {entry.name for entry in fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ConfigProblem(f"unknown setting(s): {', '.join(unknown)}")
        _check_kinds(raw, fields(cls))
        values = dict(raw)
        raw_endpoints = values.pop("endpoints", ()) or ()
        if not isinstance(raw_endpoints, list | tuple):
            raise ConfigProblem("endpoints must be a list of endpoints (base_url and model)")
        endpoints = tuple(_endpoint(entry) for entry in raw_endpoints)
        if not endpoints:
            raise ConfigProblem("list at least one LLM endpoint (base_url and model)")
        consistency = values.pop("consistency_endpoint", None)
        for name, vocabulary in (
            ("emotions", BUILD_EMOTIONS),
            ("intensities", INTENSITIES),
            ("variants", PROMPT_VARIANTS),
        ):
            if name in values:
                chosen = tuple(str(value) for value in values[name])
                strangers = [value for value in chosen if value not in vocabulary]
                if strangers or not chosen:
                    raise ConfigProblem(
                        f"{name} must be chosen from {', '.join(vocabulary)}; got {', '.join(chosen) or 'none'}"
                    )
                values[name] = chosen
        if "voices" in values:
            values["voices"] = tuple(str(voice) for voice in values["voices"]) or cls.voices
        elif values.get("tts_backend") == "openai":
            # eSpeak's voice names mean nothing to a speech server: use the OpenAI voice names.
            values["voices"] = OPENAI_VOICES
        config = cls(
            endpoints=endpoints,
            consistency_endpoint=_endpoint(consistency) if consistency else None,
            **values,
        )
        config.check()
        return config

    def outbound_endpoints(self) -> list[tuple[str, str, str]]:
        """Return (what, URL, key variable) of every endpoint this build calls, for the outbound
        policy (webapp.outbound.endpoint_problems) to check on save."""
        endpoints = [
            (f"endpoints[{index}]", endpoint.base_url, endpoint.api_key_env)
            for index, endpoint in enumerate(self.endpoints)
        ]
        if "endpoint" in self.consistency_methods() and self.consistency_endpoint is not None:
            endpoint = self.consistency_endpoint
            endpoints.append(("consistency_endpoint", endpoint.base_url, endpoint.api_key_env))
        if self.tts_backend == "openai":
            endpoints.append(("tts_base_url", self.tts_base_url, ""))
        return endpoints

    def endpoint_urls(self) -> dict[str, str]:
        """Return {what: URL} of the endpoints this build calls (their changes are recorded)."""
        return {what: url for what, url, _ in self.outbound_endpoints()}

    def consistency_methods(self) -> tuple[str, ...]:
        """Return the emotion-consistency checks a sample must pass (one, or two for the joint rule)."""
        return tuple(method for method in (self.consistency_method, self.consistency_joint_method) if method)

    def check(self) -> None:
        """Raise ConfigProblem when a number is out of range or a method is unknown."""
        if not 1 <= self.query_min_score <= 5 or not 1 <= self.response_min_score <= 5:
            raise ConfigProblem("filter scores are on a 1-5 scale")
        if not 0.0 <= self.consistency_min_confidence <= 1.0:
            raise ConfigProblem("consistency_min_confidence is a probability in [0, 1]")
        if self.consistency_method not in CONSISTENCY_METHODS:
            raise ConfigProblem("consistency_method is 'acoustic', 'endpoint' or 'local'")
        if self.consistency_joint_method not in ("", *CONSISTENCY_METHODS):
            raise ConfigProblem("consistency_joint_method is '', 'acoustic', 'endpoint' or 'local'")
        if self.consistency_joint_method == self.consistency_method:
            raise ConfigProblem("consistency_joint_method must be a different check from consistency_method")
        methods = self.consistency_methods()
        if "endpoint" in methods and self.consistency_endpoint is None:
            raise ConfigProblem("the endpoint consistency check needs consistency_endpoint")
        if "local" in methods and not self.consistency_model_path.strip():
            raise ConfigProblem("the local consistency check needs consistency_model_path (a model folder)")
        if self.tts_backend not in ("espeak", "openai"):
            raise ConfigProblem("tts_backend is 'espeak' or 'openai'")
        if self.tts_backend == "openai" and not self.tts_base_url:
            raise ConfigProblem("the openai TTS backend needs tts_base_url")
        if self.tts_speaker_prompt and self.tts_backend != "openai":
            raise ConfigProblem(
                "tts_speaker_prompt needs the openai TTS backend (eSpeak NG takes no reference voice)"
            )
        if self.tts_base_url and (problem := web_url_problem(self.tts_base_url)):
            raise ConfigProblem(f"tts_base_url {problem}")
        if not 1 <= self.batch_size <= 1000 or not 1 <= self.shards <= 64 or self.audio_threads < 1:
            raise ConfigProblem("batch_size is 1-1000, shards 1-64, audio_threads at least 1")
        if not 0.0 <= self.spot_check_rate <= 1.0:
            raise ConfigProblem("spot_check_rate is a fraction in [0, 1]")


def _endpoint(raw: object) -> Endpoint:
    if not isinstance(raw, Mapping) or not raw.get("base_url") or not raw.get("model"):
        raise ConfigProblem("each endpoint needs a base_url and a model")
    known = {entry.name for entry in fields(Endpoint)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigProblem(f"unknown endpoint setting(s): {', '.join(unknown)}")
    _check_kinds(raw, fields(Endpoint))
    endpoint = Endpoint(**dict(raw))
    if problem := web_url_problem(endpoint.base_url):
        raise ConfigProblem(f"an endpoint's base_url {problem}")
    if endpoint.api_key_env and key_variable_problem(endpoint.api_key_env, JUDGE_KEY_ENV_PREFIX):
        raise ConfigProblem(str(key_variable_problem(endpoint.api_key_env, JUDGE_KEY_ENV_PREFIX)))
    if endpoint.max_concurrency < 1 or endpoint.max_retries < 0 or endpoint.timeout_s <= 0:
        raise ConfigProblem("max_concurrency is at least 1, max_retries at least 0, timeout_s above 0")
    return endpoint


def _check_kinds(raw: Mapping[str, Any], entries: tuple[Field[Any], ...]) -> None:
    """Raise ConfigProblem when a setting holds the wrong kind of value (text for a number, ...).

    The kind is the default's, so a configuration typed by hand (Django admin's JSON box) fails
    here in words rather than as a TypeError in a stage job or on the build page.
    """
    for entry in entries:
        if entry.name not in raw:
            continue
        default = entry.default_factory() if entry.default_factory is not MISSING else entry.default
        if default is MISSING and entry.type == "str":
            default = ""  # a required text setting (an endpoint's base_url and model)
        value = raw[entry.name]
        if isinstance(default, tuple):
            fits = isinstance(value, list | tuple) and all(isinstance(part, str) for part in value)
            kind = "a list of names"
        elif isinstance(default, bool):
            fits, kind = isinstance(value, bool), "true or false"
        elif isinstance(default, float):
            fits = isinstance(value, int | float) and not isinstance(value, bool)
            kind = "a number"
        elif isinstance(default, int):
            fits = isinstance(value, int) and not isinstance(value, bool)
            kind = "a whole number"
        elif isinstance(default, str):
            fits, kind = isinstance(value, str), "text"
        elif isinstance(default, dict):
            fits, kind = isinstance(value, dict), "an object"
        else:
            continue  # endpoints and consistency_endpoint: read by _endpoint
        if not fits:
            raise ConfigProblem(f"{entry.name} must be {kind}; got {value!r}")

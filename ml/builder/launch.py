"""Starting a build: the one check of a name, counts and JSON configuration, then the Build row.

``manage.py start_build`` and the "Start a build" page both call ``check_request`` and
``launch``, so a configuration one of them refuses the other refuses with the same words.
Endpoint checks live in ``BuildConfig.from_json`` (the stage jobs read the stored config
through it again), so whatever it grows to check, both ways in check it too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from ml.builder.config import BuildConfig, ConfigProblem, Endpoint
from ml.builder.models import Build
from ml.builder.runner import start_build
from webapp.models import User
from webapp.outbound import endpoint_problems

# The page's textarea starts with every documented default and a placeholder endpoint (the one
# setting without a default). Voices are left out: without them from_json picks eSpeak or OpenAI
# voice names to match tts_backend, which a pre-filled eSpeak list would silently override.
EXAMPLE_ENDPOINT = Endpoint(base_url="https://llm.example.org/v1", model="your-model")


def default_config_text() -> str:
    """Return the JSON the "Start a build" form opens with."""
    values = BuildConfig(endpoints=(EXAMPLE_ENDPOINT,)).to_json()
    del values["voices"]
    return json.dumps(values, indent=2)


class BuildRefused(ValueError):
    """A build that was not started, with the reason in words (no row was stored)."""


@dataclass(frozen=True)
class BuildRequest:
    name: str
    config: BuildConfig
    single: int
    dialogues: int
    seed: int


def parse_config(text: str) -> BuildConfig:
    """Return the checked configuration of a JSON text; raise ConfigProblem saying what is wrong."""
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise ConfigProblem(f"the configuration is not valid JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigProblem("the configuration is a JSON object of settings, {...}")
    try:
        return BuildConfig.from_json(raw)
    except (TypeError, AttributeError) as exc:
        # A number given as text, a list given as a number: from_json's arithmetic trips on it.
        raise ConfigProblem(f"a setting has the wrong type ({exc})") from exc


def check_request(name: str, config_text: str, single: int, dialogues: int, seed: int) -> BuildRequest:
    """Return the request, checked; raise BuildRefused with the first thing wrong."""
    name = name.strip()
    if not name:
        raise BuildRefused("give the build a name")
    if min(single, dialogues, seed) < 0:
        raise BuildRefused("counts and the seed cannot be negative")
    try:
        config = parse_config(config_text)
    except ConfigProblem as exc:
        raise BuildRefused(str(exc)) from exc
    # The outbound policy (webapp.outbound): no endpoint on an internal host, keys bound to hosts.
    if problems := endpoint_problems(config.outbound_endpoints()):
        raise BuildRefused("; ".join(problems))
    if Build.objects.filter(name=name).exists():
        raise BuildRefused(f"a build named {name!r} exists already")
    return BuildRequest(name=name, config=config, single=single, dialogues=dialogues, seed=seed)


def launch(request: BuildRequest, started_by: User | None = None) -> Build:
    """Store the build and start planning (its stages then run on the Celery workers)."""
    try:
        with transaction.atomic():  # a build is stored started, or not at all
            build = Build.objects.create(
                name=request.name,
                single_turn_count=request.single,
                dialogue_count=request.dialogues,
                seed=request.seed,
                config=request.config.to_json(),
                created_by=started_by,
            )
            return start_build(build, started_by)
    except IntegrityError as exc:  # the same name, started at the same moment by someone else
        raise BuildRefused(f"a build named {request.name!r} exists already") from exc

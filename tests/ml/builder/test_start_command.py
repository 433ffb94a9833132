"""manage.py start_build checks the configuration and starts planning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from ml.builder.models import Build
from webapp.models import Job

pytestmark = pytest.mark.django_db


def test_a_good_configuration_starts_a_build(tmp_path: Path, capsys, queued_here) -> None:
    config = tmp_path / "build.json"
    config.write_text(json.dumps({"endpoints": [{"base_url": "http://llm:8000/v1", "model": "m"}]}))
    call_command("start_build", "first", "--config", str(config), "--single", "20", "--dialogues", "2")
    build = Build.objects.get(name="first")
    assert (build.status, build.single_turn_count, build.dialogue_count) == ("running", 20, 2)
    assert Job.objects.get().parameters == {"build": build.pk, "stage": "plan", "shard": 0}
    assert "started" in capsys.readouterr().out


def test_a_bad_configuration_starts_nothing(tmp_path: Path) -> None:
    config = tmp_path / "build.json"
    config.write_text(json.dumps({"endpoints": []}))
    with pytest.raises(CommandError, match="at least one LLM endpoint"):
        call_command("start_build", "second", "--config", str(config))
    assert not Build.objects.exists()

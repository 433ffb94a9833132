"""Several base models: raw base folders and s3:// prefixes register, and every form offers them."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.forms import ChoiceField

from ml.core.speech.tiny import build_tiny_speech_lm
from ml.jobs.checkpoint_registry import resolve_start, start_choice_value
from ml.jobs.echomind.forms import EchoMindInferenceJobForm
from ml.jobs.forms import InferenceJobForm, RlJobForm, SftJobForm
from ml.jobs.models import Checkpoint
from tests.support.s3_server import S3Server

pytestmark = pytest.mark.usefixtures("ml_storage")


def raw_base(folder: Path, arch: str = "qwen2_audio") -> Path:
    # What a lab downloads: config.json, weights and preprocessing files, no metadata.json of ours.
    build_tiny_speech_lm(arch, seed=0).save_pretrained(folder)
    assert not (folder / "metadata.json").exists()
    return folder


def test_raw_base_folders_register_and_every_form_offers_them(db: None, tmp_path: Path) -> None:
    call_command("register_checkpoint", str(raw_base(tmp_path / "a")), "--kind", "base", "--name", "base-a")
    omni = raw_base(tmp_path / "b", "qwen2_5_omni_thinker")
    call_command("register_checkpoint", str(omni), "--kind", "base", "--name", "base-b")

    bases = {row.name: row for row in Checkpoint.objects.filter(kind=Checkpoint.Kind.BASE)}
    assert set(bases) == {"base-a", "base-b"}
    assert bases["base-a"].arch == "qwen2_audio" and bases["base-b"].arch == "qwen2_5_omni_thinker"
    assert "model.safetensors" in bases["base-a"].metadata["weight_sha256"]
    # Nothing is written into the lab's folder.
    assert not (omni / "metadata.json").exists()
    choices = {start_choice_value(row) for row in bases.values()}
    for form in (SftJobForm(), RlJobForm(), InferenceJobForm(), EchoMindInferenceJobForm()):
        field = form.fields["start_from"]
        assert isinstance(field, ChoiceField)
        offered = {value for value, _ in field.widget.choices}
        assert choices <= offered, type(form).__name__
    assert resolve_start(start_choice_value(bases["base-b"])) == (str(omni), bases["base-b"])


def test_a_folder_that_is_no_model_is_refused_as_a_base(db: None, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(CommandError, match=r"not a complete base model: .*no config\.json"):
        call_command("register_checkpoint", str(tmp_path / "empty"), "--kind", "base", "--name", "x")
    # Other kinds still need our metadata.json.
    with pytest.raises(CommandError, match="not a complete checkpoint"):
        call_command("register_checkpoint", str(raw_base(tmp_path / "a")), "--kind", "sft", "--name", "y")
    assert not Checkpoint.objects.exists()


def test_a_raw_base_registers_from_s3(db: None, tmp_path: Path, s3_server: S3Server) -> None:
    from ml.core.checkpoints import upload_directory

    client = s3_server.client()
    client.create_bucket(Bucket="models")
    upload_directory(raw_base(tmp_path / "local"), "s3://models/bases/tiny", client)

    call_command("register_checkpoint", "s3://models/bases/tiny", "--kind", "base", "--name", "s3-base")

    row = Checkpoint.objects.get(name="s3-base")
    assert row.uri == "s3://models/bases/tiny" and row.arch == "qwen2_audio"

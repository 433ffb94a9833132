"""Admin pages of the judging side: register, import, configure a judge, start a run, drill down."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from evaluation.judging.models import JudgeConfig, Judgement, JudgeRun
from evaluation.outputs.models import ModelOutput, System
from tests.evaluation.judging_support import BenchmarkItemFactory, echochat_text, jsonl, zip_of
from tests.factories import JudgeConfigFactory, JudgementFactory, ModelOutputFactory, tiny_wav
from webapp.models import Job

pytestmark = pytest.mark.usefixtures("media_root")


def test_register_a_system_then_import_its_outputs(client_for) -> None:
    client = client_for("admin")
    BenchmarkItemFactory.create(external_id="EE-1")
    response = client.post(
        reverse("evaluation:system_create"), {"name": "Omni-X", "category": "omni", "version": "v2"}
    )
    system = System.objects.get(name="Omni-X")
    assert response["Location"] == reverse("evaluation:output_import", args=[system.pk])
    upload = {
        "benchmark_version": "echoeval-v1",
        "rows": SimpleUploadedFile("rows.jsonl", jsonl({"item_id": "EE-1", "output": echochat_text()})),
        "audio_zip": SimpleUploadedFile("audio.zip", zip_of({"EE-1.wav": tiny_wav()})),
    }
    html = client.post(reverse("evaluation:output_import", args=[system.pk]), upload).content.decode()
    assert 'id="import-report" data-imported="yes"' in html
    assert ModelOutput.objects.get(system=system).structured


def test_an_import_with_problems_lists_them(client_for) -> None:
    system = System.objects.create(name="Omni-X")
    upload = {
        "benchmark_version": "echoeval-v1",
        "rows": SimpleUploadedFile("rows.jsonl", b'{"item_id": "EE-404", "output": "x"}\n'),
        "audio_zip": SimpleUploadedFile("audio.zip", zip_of({})),
    }
    html = (
        client_for("admin")
        .post(reverse("evaluation:output_import", args=[system.pk]), upload)
        .content.decode()
    )
    assert 'data-imported="no"' in html
    assert "line 1 (EE-404): unknown item: no item has this id" in html


def test_a_zip_that_is_not_a_zip_is_reported(client_for) -> None:
    system = System.objects.create(name="Omni-X")
    upload = {
        "benchmark_version": "echoeval-v1",
        "rows": SimpleUploadedFile("rows.jsonl", b'{"item_id": "EE-1", "output": "x"}\n'),
        "audio_zip": SimpleUploadedFile("audio.zip", b"not a zip"),
    }
    html = (
        client_for("admin")
        .post(reverse("evaluation:output_import", args=[system.pk]), upload)
        .content.decode()
    )
    assert "The audio upload is not a readable zip archive" in html


def test_configure_a_judge_and_start_a_run(client_for, users) -> None:
    client = client_for("admin")
    system = System.objects.create(name="Omni-X")
    client.post(
        reverse("evaluation:judge_config_create"),
        {
            "name": "local",
            "base_url": "http://127.0.0.1:8000/v1",
            "model": "qwen-judge",
            "max_retries": 2,
            "temperature": 0,
        },
    )
    config = JudgeConfig.objects.get(name="local")
    assert (config.effective_model, config.client_config().max_retries) == ("qwen-judge", 2)
    data = {"system": system.pk, "benchmark_version": "echoeval-v1", "judge_config": config.pk}
    response = client.post(reverse("evaluation:judge_run_list"), data)
    run = JudgeRun.objects.get()
    assert response["Location"] == reverse("evaluation:judge_run_detail", args=[run.pk])
    assert run.job is not None and run.job.kind == "judge_run" and run.job.started_by == users["admin"]
    assert run.job.parameters["judge_run_id"] == run.pk
    # a second start while the first is queued is refused, and says why
    html = client.post(reverse("evaluation:judge_run_list"), data).content.decode()
    assert "still queued or running" in html
    assert Job.objects.filter(kind="judge_run").count() == 1


def test_the_drill_down_shows_output_gold_and_every_judge(client_for) -> None:
    system = System.objects.create(name="Omni-X")
    output = ModelOutputFactory.create(system=system, item=BenchmarkItemFactory.create(external_id="EE-1"))
    first = JudgeConfigFactory.create(name="judge-a")
    second = JudgeConfigFactory.create(name="judge-b")
    Judgement.objects.create(
        output=output,
        stage="perception",
        judge_config=first,
        judge_model="m",
        prompt_version="perception-v1",
        subscores={"polarity": 1, "emotion": 0},
        judge_flags=["wrong_primary_emotion"],
        raw_sum=7,
        cap=5,
        cap_reasons=["wrong_primary_emotion"],
        score=5,
        rationale="Calls the sadness anger.",
    )
    JudgementFactory.create(output=output, stage="perception", judge_config=second, score=None)
    html = client_for("admin").get(reverse("evaluation:item_detail", args=[output.item.pk])).content.decode()
    assert 'data-testid="gold"' in html and "loneliness" in html
    assert "I&#x27;m sorry you ate alone. Want to talk?" in html
    assert '<strong data-testid="score">5</strong> (raw 7, capped at 5)' in html
    assert "Calls the sadness anger." in html and '<span class="chip">emotion 0</span>' in html
    assert "judge error (Not valid JSON): answer is not a JSON object" in html
    assert '<audio controls preload="none" src="/media/a/' in html


def test_an_empty_leaderboard_says_what_to_do(client_for) -> None:
    html = client_for("admin").get(reverse("evaluation:leaderboard")).content.decode()
    assert "No judge is configured yet." in html
    assert f'href="{reverse("evaluation:judge_config_create")}"' in html

    JudgeConfig.objects.create(name="Offline", offline_heuristic=True)
    html = client_for("admin").get(reverse("evaluation:leaderboard")).content.decode()
    assert "Nothing has been judged by Offline" in html
    assert f'href="{reverse("evaluation:judge_run_list")}"' in html


def test_the_judge_run_page_says_how_to_add_a_judge_instead_of_an_empty_choice(client_for) -> None:
    page = reverse("evaluation:judge_run_list")
    html = client_for("admin").get(page).content.decode()
    assert 'data-testid="no-judge"' in html and 'id="start-judge-run"' not in html
    assert f'href="{reverse("evaluation:judge_config_create")}"' in html

    judge = JudgeConfig.objects.create(name="Offline", offline_heuristic=True)
    html = client_for("admin").get(page).content.decode()
    assert 'id="start-judge-run"' in html and 'data-testid="no-judge"' not in html
    assert f'<option value="{judge.pk}" selected>' in html


def test_the_run_form_preselects_a_judge_only_when_there_is_one(db: None) -> None:
    from evaluation.judging.forms import JudgeRunForm

    only = JudgeConfigFactory.create(name="only")
    assert JudgeRunForm().fields["judge_config"].initial == only.pk
    JudgeConfigFactory.create(name="newer")
    # with two, nobody's run silently lands on the newest judge: the person names one
    form = JudgeRunForm()
    assert form.fields["judge_config"].initial is None
    assert 'value="" selected>Choose a judge</option>' in str(form["judge_config"])
    system = System.objects.create(name="S")
    unnamed = JudgeRunForm({"system": system.pk, "benchmark_version": "echoeval-v1"})
    assert not unnamed.is_valid() and "judge_config" in unnamed.errors

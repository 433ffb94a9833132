"""The judge audit finds a planted length bias, none in a clean judge, and the caps it must hit."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from evaluation.judging.heuristic import DEMO_JUDGE_NAME
from evaluation.judging.models import JudgeCacheEntry, JudgeConfig
from evaluation.results.judge_audit import AuditRefused, start_judge_audit
from tests.evaluation.judging_support import rubric_judge
from tests.evaluation.results.audit_support import audited_system, length_biased_judge, stub_config
from tests.support.fake_chat_server import running_chat_server
from webapp.jobs import run_job
from webapp.models import Job, JobStatus

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]


def _audit(config: JudgeConfig, **options) -> dict:
    audit = start_judge_audit(config, "echoeval-v1", **options)
    assert audit.job is not None
    run_job(audit.job.pk)
    job = Job.objects.get(pk=audit.job.pk)
    assert job.status == JobStatus.SUCCEEDED, job.error or job.log
    assert job.progress == 1.0
    assert isinstance(job.result, dict)
    return job.result


def test_the_heuristic_judge_hits_every_cap_and_is_consistent() -> None:
    audited_system()
    heuristic = JudgeConfig.objects.create(name=DEMO_JUDGE_NAME, offline_heuristic=True)
    result = _audit(heuristic, repeats=2)

    assert result["n_outputs"] == 6
    for probe in ("wrong_emotion", "not_recommended"):
        figure = result["caps"][probe]
        assert figure["n"] == 6
        assert figure["estimate"] == 1.0
        assert figure["low"] is not None and figure["low"] > 0.5
    perception = result["consistency"]["perception"]
    assert perception["spread"]["estimate"] == 0.0 and perception["spread"]["n"] == 6
    assert perception["cap_flips"]["estimate"] == 0.0
    # The heuristic counts reference words: padding with neutral ones changes nothing.
    assert result["sensitivity"]["length"]["estimate"] == 0.0
    assert result["sensitivity"]["length"]["n"] == 6


def test_the_audit_finds_a_planted_length_bias_and_none_in_a_clean_judge() -> None:
    audited_system()
    with (
        running_chat_server(length_biased_judge()) as biased_server,
        running_chat_server(rubric_judge()) as clean_server,
    ):
        biased = stub_config("biased", biased_server.base_url)
        clean = stub_config("clean", clean_server.base_url)
        biased_result = _audit(biased, repeats=2, compare_with=[clean])
        clean_result = _audit(clean, repeats=2)
        asked_before = len(biased_server.requests)
        _audit(biased, repeats=2)
        # A second audit of the same judge is answered by the judge cache.
        assert len(biased_server.requests) == asked_before

    length = biased_result["sensitivity"]["length"]
    assert length["n"] == 6 and length["excludes_zero"] and length["low"] > 0
    clean_length = clean_result["sensitivity"]["length"]
    assert clean_length["n"] == 6 and not clean_length["excludes_zero"]
    assert clean_result["sensitivity"]["field_order"]["n"] > 0
    assert not clean_result["sensitivity"]["field_order"]["excludes_zero"]
    assert biased_result["inter_judge"]["judges"] == ["biased", "clean"]
    from evaluation.results.judge_audit import audit_page
    from evaluation.results.models import JudgeAudit

    first_audit = JudgeAudit.objects.filter(judge_config=biased).order_by("pk").first()
    assert first_audit is not None
    charts = dict(audit_page(first_audit)["charts"])
    sensitivity = next(chart for title, chart in charts.items() if title.startswith("Sensitivity"))
    assert {row["label"]: row["bias"] for row in sensitivity["rows"]} == {
        "Reply padded with neutral sentences": True,
        "Output fields in reverse order": False,
    }
    assert JudgeCacheEntry.objects.exists()


def test_the_ensemble_is_a_judge_of_its_own_over_its_members() -> None:
    audited_system(3)
    heuristic = JudgeConfig.objects.create(name="heuristic", offline_heuristic=True)
    with running_chat_server(rubric_judge()) as server:
        clean = stub_config("clean", server.base_url)
        other = stub_config("other", server.base_url)
        ensemble = JudgeConfig.objects.create(name="ensemble")
        ensemble.members.set([heuristic, clean, other])
        result = _audit(ensemble, repeats=2)
    # Two of three members answer alike and raise no cap: the median is theirs.
    assert result["caps"]["not_recommended"]["estimate"] == 1.0
    assert result["consistency"]["response_content"]["spread"]["n"] == 3


def test_an_audit_refuses_a_single_repeat_and_a_judge_without_endpoint(settings) -> None:
    audited_system(1)
    settings.JUDGE_BASE_URL = ""
    nowhere = JudgeConfig.objects.create(name="nowhere")
    heuristic = JudgeConfig.objects.create(name="heuristic", offline_heuristic=True)
    with pytest.raises(AuditRefused, match="twice"):
        start_judge_audit(heuristic, "echoeval-v1", repeats=1)
    with pytest.raises(AuditRefused, match="no endpoint"):
        start_judge_audit(nowhere, "echoeval-v1")
    with pytest.raises(AuditRefused, match="No outputs"):
        start_judge_audit(heuristic, "echoeval-v9")


def test_the_audit_alpha_equals_the_krippendorff_package() -> None:
    from evaluation.judging.audit import alpha_with_interval

    rng = np.random.default_rng(3)
    ratings = rng.integers(0, 6, size=(20, 3)).astype(float)
    ratings[2, 1] = np.nan
    table = [[None if np.isnan(value) else float(value) for value in row] for row in ratings]
    figure = alpha_with_interval(table, n_boot=200)
    expected = krippendorff.alpha(reliability_data=ratings.T, level_of_measurement="interval")
    assert figure.estimate == pytest.approx(expected)
    assert figure.low is not None and figure.high is not None and figure.estimate is not None
    assert figure.low <= figure.estimate <= figure.high
    assert figure.n == 20


def test_a_judge_run_of_an_ensemble_stores_the_median_of_its_members() -> None:
    from evaluation.judging.models import Judgement
    from evaluation.judging.runs import start_judge_run
    from tests.evaluation.judging_support import GOOD_SUBSCORES

    system = audited_system(2)
    heuristic = JudgeConfig.objects.create(name="heuristic", offline_heuristic=True)
    with (
        running_chat_server(length_biased_judge()) as biased_server,
        running_chat_server(rubric_judge()) as clean_server,
    ):
        biased = stub_config("biased", biased_server.base_url)
        clean = stub_config("clean", clean_server.base_url)
        ensemble = JudgeConfig.objects.create(name="ensemble")
        ensemble.members.set([heuristic, biased, clean])
        run = start_judge_run(system, "echoeval-v1", ensemble, started_by=None)
        assert run.job is not None
        run_job(run.job.pk)
    assert Job.objects.get(pk=run.job.pk).status == JobStatus.SUCCEEDED
    judgements = Judgement.objects.filter(judge_config=ensemble)
    assert judgements.count() == 2 * 3 and not judgements.errors().exists()
    assert ensemble.effective_model == "median of biased, clean, heuristic"
    # Two of three members (the stubs) give the good reasoning sub-scores: the median is theirs.
    reasoning = judgements.filter(stage="reasoning").first()
    assert reasoning is not None and reasoning.subscores == GOOD_SUBSCORES["reasoning"]


# Replies using more and more of the gold reference's words: the heuristic scores them apart.
GRADED_REPLIES = (
    "Okay.",
    "That sounds lonely.",
    "A lonely evening, I hear you.",
    "A lonely evening; you want connection.",
    "A lonely evening; you want connection and to feel less alone.",
    "A lonely evening; you want connection, to feel less alone, and no lecturing: questioning helps.",
)
HAND_SCORES = {"evaluator": (1, 2, 2, 3, 4, 5), "lead": (1, 1, 3, 3, 5, 4)}


def test_agreement_with_people_equals_scipy_and_the_krippendorff_package(users) -> None:
    from scipy import stats as scipy_stats

    from evaluation.judging.models import HumanJudgement, Judgement
    from evaluation.judging.runs import start_judge_run

    system = audited_system(6, replies=GRADED_REPLIES)
    heuristic = JudgeConfig.objects.create(name="heuristic", offline_heuristic=True)
    run = start_judge_run(system, "echoeval-v1", heuristic, started_by=None)
    assert run.job is not None
    run_job(run.job.pk)
    outputs = list(system.outputs.order_by("item__external_id"))
    for name, scores in HAND_SCORES.items():
        for output, score in zip(outputs, scores, strict=True):
            HumanJudgement.objects.create(
                output=output,
                stage="response_content",
                evaluator=users[name],
                subscores={},
                raw_sum=score,
                score=score,
            )
    result = _audit(heuristic, repeats=2)

    judged = [
        Judgement.objects.get(output=output, stage="response_content", judge_config=heuristic).score
        for output in outputs
    ]
    assert len(set(judged)) > 2  # the replies are told apart
    human_means = [(a + b) / 2 for a, b in zip(*HAND_SCORES.values(), strict=True)]
    spearman = result["human"]["heuristic"]["spearman"]["Response content"]
    assert spearman["n"] == 6
    assert spearman["estimate"] == pytest.approx(scipy_stats.spearmanr(judged, human_means).statistic)
    assert spearman["low"] is not None and spearman["high"] is not None
    assert spearman["low"] <= spearman["estimate"] <= spearman["high"]
    alpha = result["human"]["heuristic"]["alpha"]["response_content"]
    reliability = np.array([judged, HAND_SCORES["evaluator"], HAND_SCORES["lead"]], dtype=float)
    assert alpha["n"] == 6
    assert alpha["estimate"] == pytest.approx(
        krippendorff.alpha(reliability_data=reliability, level_of_measurement="interval")
    )


def test_a_listening_judge_is_probed_with_two_voices_and_two_loudness_levels() -> None:
    audited_system(3, text_only=False)
    with running_chat_server(rubric_judge()) as server:
        listener = stub_config("listener", server.base_url, attach_audio=True)
        result = _audit(listener, repeats=2)
        bodies = [request.json for request in server.requests if isinstance(request.json, dict)]
        audio_requests = [body for body in bodies if isinstance(body["messages"][1]["content"], list)]
    for probe in ("voice", "loudness"):
        figure = result["sensitivity"][probe]
        assert figure["n"] == 3 and not figure["excludes_zero"]
    # The original, the other voice and the quieter one: three different recordings per reply.
    sounds = {body["messages"][1]["content"][1]["input_audio"]["data"] for body in audio_requests}
    assert len(sounds) == 3 * 3


def test_a_judge_that_does_not_listen_gets_no_audio_probe() -> None:
    audited_system(2, text_only=False)
    heuristic = JudgeConfig.objects.create(name="heuristic", offline_heuristic=True)
    result = _audit(heuristic, repeats=2)
    assert "voice" not in result["sensitivity"] and "response_audio" not in result["consistency"]


def test_the_judge_form_makes_an_ensemble_of_single_judges_only() -> None:
    from evaluation.judging.forms import JudgeConfigForm

    heuristic = JudgeConfig.objects.create(name="heuristic", offline_heuristic=True)
    other = JudgeConfig.objects.create(name="other", offline_heuristic=True)
    form = JudgeConfigForm(
        {"name": "ensemble", "max_retries": 3, "temperature": 0, "members": [heuristic.pk, other.pk]}
    )
    assert form.is_valid(), form.errors
    ensemble = form.save()
    assert ensemble.is_ensemble and ensemble.effective_base_url == ""
    nested = JudgeConfigForm({"name": "nested", "max_retries": 3, "temperature": 0, "members": [ensemble.pk]})
    assert not nested.is_valid() and "single judges" in str(nested.errors["members"])
    with_endpoint = JudgeConfigForm(
        {
            "name": "both",
            "max_retries": 3,
            "temperature": 0,
            "base_url": "http://127.0.0.1:9/v1",
            "members": [other.pk],
        }
    )
    assert not with_endpoint.is_valid() and "instead of an endpoint" in str(with_endpoint.errors["members"])
    assert JudgeConfig.objects.count() == 3

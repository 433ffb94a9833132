"""Evaluators apply the rubrics by hand, blind to the system; agreement with the judge is Table 3."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from evaluation.judging.human_scoring import HandScore, draw_rubric_sample, save_hand_scores
from evaluation.judging.models import HumanJudgement, RubricSample
from evaluation.outputs.models import System
from evaluation.results.agreement import judge_human_agreement, summed_pairs
from tests.evaluation.judging_support import GOOD_SUBSCORES, BenchmarkItemFactory
from tests.factories import JudgeConfigFactory, JudgementFactory, ModelOutputFactory
from tests.support.listening import listen
from webapp.models import User
from webapp.roles import Role

pytestmark = pytest.mark.usefixtures("media_root")

SECRET_NAME, SECRET_VERSION = "Qwen3-Omni-Hidden", "ckpt-4711"


@pytest.fixture
def sample(users: dict[str, User]) -> RubricSample:
    secret = System.objects.create(name=SECRET_NAME, version=SECRET_VERSION, category=System.Category.OMNI)
    other = System.objects.create(name="Other-System", text_only=True)
    for number in range(3):
        item = BenchmarkItemFactory.create(external_id=f"EE-{number}")
        ModelOutputFactory.create(system=secret, item=item)
        ModelOutputFactory.create(system=other, item=item)
    ModelOutputFactory.create(
        system=secret, item=BenchmarkItemFactory.create(external_id="EE-no-gold", gold=None)
    )
    return draw_rubric_sample(
        name="pilot", benchmark_version="echoeval-v1", n_items=2, evaluators=[users["evaluator"]], seed=1
    )


def test_a_sample_holds_every_systems_output_for_the_drawn_gold_items(sample: RubricSample) -> None:
    entries = list(sample.entries.select_related("output__item", "output__system"))
    items = {entry.output.item.external_id for entry in entries}
    assert len(items) == 2 and "EE-no-gold" not in items
    assert sorted(entry.output.system.name for entry in entries) == sorted([SECRET_NAME, "Other-System"] * 2)
    assert [entry.position for entry in entries] == [0, 1, 2, 3]


def _blind_pages(client, sample: RubricSample) -> list[tuple[str, str]]:
    pages = []
    for url in (reverse("evaluation:evaluator_queue"), reverse("evaluation:my_rubric_samples")):
        pages.append((url, client.get(url).content.decode()))
    response = client.get(reverse("evaluation:rubric_next", args=[sample.pk]))
    assert response.status_code == 302
    pages.append((response["Location"], client.get(response["Location"]).content.decode()))
    return pages


def test_nothing_an_evaluator_receives_names_the_system(sample: RubricSample, client_for) -> None:
    client = client_for("evaluator")
    secret = System.objects.get(name=SECRET_NAME)
    seen = []
    for entry in sample.entries.select_related("output"):
        url = reverse("evaluation:rubric_score", args=[sample.pk, entry.output.public_id])
        seen.append((url, client.get(url).content.decode()))
    pages = _blind_pages(client, sample) + seen
    for url, html in pages:
        for secret_text in (SECRET_NAME, SECRET_VERSION, secret.anonymous_code, "Other-System", "Omni model"):
            assert secret_text not in url and secret_text not in html, (url, secret_text)
    # the response audio reaches the browser only through a signed, expiring media URL
    speaking = next(html for _, html in seen if "<h4>Spoken response</h4>" in html)
    assert '<audio controls preload="none" src="/media/a/' in speaking
    assert "audio/model_output/" not in speaking


def test_evaluators_reach_only_their_own_samples(sample: RubricSample, client_for, make_user) -> None:
    outsider = Client()
    outsider.force_login(make_user(Role.EVALUATOR, "outsider"))
    entry = sample.entries.select_related("output").get(position=0)
    assert outsider.get(reverse("evaluation:rubric_next", args=[sample.pk])).status_code == 404
    assert (
        outsider.get(reverse("evaluation:rubric_score", args=[sample.pk, entry.output.public_id])).status_code
        == 404
    )
    stranger_output = System.objects.get(name=SECRET_NAME).outputs.get(item__external_id="EE-no-gold")
    response = client_for("evaluator").get(
        reverse("evaluation:rubric_score", args=[sample.pk, stranger_output.public_id])
    )
    assert response.status_code == 404


def _form_data(stages: dict[str, dict[str, int]], flags: dict[str, list[str]] | None = None) -> dict:
    data: dict = {"comment": "ok"}
    for stage, subscores in stages.items():
        data.update({f"{stage}__{name}": str(value) for name, value in subscores.items()})
        data[f"{stage}__flags"] = (flags or {}).get(stage, [])
    return data


def test_scoring_by_hand_applies_the_caps_and_moves_on(sample: RubricSample, client_for, users) -> None:
    client = client_for("evaluator")
    entry = sample.entries.select_related("output__system").get(position=0)
    stages = ["perception", "reasoning", "response_content"]
    if not entry.output.system.text_only:
        stages.append("response_audio")
        listen(users["evaluator"], entry.output.response_audio_key)  # the audio score needs it heard
    url = reverse("evaluation:rubric_score", args=[sample.pk, entry.output.public_id])
    response = client.post(
        url,
        _form_data(
            {stage: GOOD_SUBSCORES[stage] for stage in stages}, {"perception": ["wrong_primary_emotion"]}
        ),
    )
    assert response.status_code == 302 and response["Location"] == reverse(
        "evaluation:rubric_next", args=[sample.pk]
    )
    perception = HumanJudgement.objects.get(
        output=entry.output, stage="perception", evaluator=users["evaluator"]
    )
    # sub-scores sum to 8; the evaluator's wrong-emotion flag caps perception at 5
    assert (perception.raw_sum, perception.cap, perception.score) == (8, 5, 5)
    assert HumanJudgement.objects.filter(output=entry.output).count() == len(stages)
    # the next output is the second entry
    assert client.get(response["Location"])["Location"].endswith(
        f"/{sample.entries.get(position=1).output.public_id}/"
    )


def test_a_missing_sub_score_is_refused(sample: RubricSample, client_for) -> None:
    entry = sample.entries.select_related("output").get(position=0)
    url = reverse("evaluation:rubric_score", args=[sample.pk, entry.output.public_id])
    response = client_for("evaluator").post(url, {"comment": "", "perception__polarity": "1"})
    assert response.status_code == 200
    assert not HumanJudgement.objects.exists()


def test_agreement_is_spearman_per_stage_with_a_bootstrap_interval(db: None, users) -> None:
    # judge perception 2, 4, 6, 8, 10 against hand scores 1, 3, 2, 4, 5 (averaged over two evaluators
    # on the first output: 0 and 2): ranks 1 2 3 4 5 vs 1 3 2 4 5, sum d^2 = 2,
    # rho = 1 - 6 * 2 / (5 * 24) = 0.9
    judge = JudgeConfigFactory.create(name="judge")
    system = System.objects.create(name="S", text_only=True)
    second = User.objects.create_user("evaluator2", password="x")
    for number, (judge_score, human_score) in enumerate(zip([2, 4, 6, 8, 10], [1, 3, 2, 4, 5], strict=True)):
        output = ModelOutputFactory.create(
            system=system, item=BenchmarkItemFactory.create(external_id=f"EE-{number}")
        )
        JudgementFactory.create(output=output, stage="perception", judge_config=judge, score=judge_score)
        scores = [(users["evaluator"], human_score)] if number else [(users["evaluator"], 0), (second, 2)]
        for evaluator, score in scores:
            HumanJudgement.objects.create(
                output=output,
                stage="perception",
                evaluator=evaluator,
                subscores={},
                raw_sum=score,
                score=score,
            )
    table = judge_human_agreement(judge, n_boot=500)
    perception = table.dimensions[0]
    assert (perception.label, perception.n) == ("Perception", 5)
    assert perception.correlation is not None
    assert perception.correlation.rho == pytest.approx(0.9)
    assert perception.correlation.low <= 0.9 <= perception.correlation.high
    assert table.dimensions[1].correlation is None and table.dimensions[1].note.startswith("needs at least 3")
    assert table.all_average is None  # a dimension without agreement leaves "All" undefined


def test_save_hand_scores_records_the_apps_own_flags(db: None, users) -> None:
    system = System.objects.create(name="S", text_only=True)
    output = ModelOutputFactory.create(
        system=system, item=BenchmarkItemFactory.create(external_id="EE-1"), perception_text=""
    )
    scores = {
        stage: HandScore(GOOD_SUBSCORES[stage], [])
        for stage in ("perception", "reasoning", "response_content")
    }
    saved = {
        judgement.stage: judgement for judgement in save_hand_scores(users["evaluator"], output, scores, "")
    }
    assert (saved["perception"].auto_flags, saved["perception"].score) == (["empty_or_off_topic"], 1)


def test_summed_pairs_take_one_number_per_output_by_hand() -> None:
    outputs = [
        # content 4 + audio 2 (judge), 5 + 1 (human)
        {"response_content": (4.0, 5.0), "response_audio": (2.0, 1.0), "reasoning": (7.0, 6.0)},
        # no audio (a text-only system): left out of the response sum, not counted on another scale
        {"response_content": (3.0, 3.0)},
        # shift perception stands for perception
        {"shift_perception": (6.0, 5.0), "reasoning": (2.0, 3.0)},
    ]
    response = (("response_content",), ("response_audio",))
    assert summed_pairs(outputs, response) == [(6.0, 6.0)]
    perception_and_reasoning = (("perception", "shift_perception"), ("reasoning",))
    assert summed_pairs(outputs, perception_and_reasoning) == [(8.0, 8.0)]


def test_response_agreement_is_on_per_output_sums_not_pooled_pairs(db: None, users) -> None:
    # (judge content, judge audio, human content, human audio) for four outputs
    scores = [(5, 1, 5, 1), (4, 4, 4, 4), (3, 5, 3, 5), (1, 2, 2, 1)]
    judge = JudgeConfigFactory.create(name="judge")
    system = System.objects.create(name="S")
    for number, (judge_content, judge_audio, human_content, human_audio) in enumerate(scores):
        output = ModelOutputFactory.create(
            system=system, item=BenchmarkItemFactory.create(external_id=f"EE-{number}")
        )
        for stage, judged, hand in (
            ("response_content", judge_content, human_content),
            ("response_audio", judge_audio, human_audio),
        ):
            JudgementFactory.create(output=output, stage=stage, judge_config=judge, score=judged)
            HumanJudgement.objects.create(
                output=output,
                stage=stage,
                evaluator=users["evaluator"],
                subscores={},
                raw_sum=hand,
                score=hand,
            )

    table = judge_human_agreement(judge, n_boot=200)

    response = table.dimensions[2]
    # sums: judge 6, 8, 8, 3 against human 6, 8, 8, 3: the same ranks, rho 1 over 4 outputs (not 8 pairs)
    assert (response.label, response.n) == ("Response (content + audio)", 4)
    assert response.correlation is not None and response.correlation.rho == pytest.approx(1.0)
    by_stage = {row.label: row for row in table.by_stage}
    # content apart: 5 4 3 1 vs 5 4 3 2, rho 1; audio apart: Pearson on the ranks (1, 3, 4, 2) and
    # (1.5, 3, 4, 1.5): 4.5 / sqrt(5 x 4.5) = 0.9487
    assert by_stage["Response content"].correlation is not None
    assert by_stage["Response content"].correlation.rho == pytest.approx(1.0)
    audio = by_stage["Response audio"].correlation
    assert audio is not None and audio.rho == pytest.approx(0.9487, abs=1e-3)
    # no output has perception or reasoning scores: nothing sums over every stage
    assert table.all_stages_sum is not None and table.all_stages_sum.n == 0

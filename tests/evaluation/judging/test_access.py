"""Who may open every page of systems, judging, results and hand scoring."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.judging.human_scoring import draw_rubric_sample
from evaluation.judging.models import RubricSample
from evaluation.judging.runs import start_judge_run
from evaluation.outputs.models import System
from tests.evaluation.judging_support import BenchmarkItemFactory
from tests.factories import JudgeConfigFactory, JudgementFactory, ModelOutputFactory
from webapp.models import User

ROLES = ["actor", "reviewer", "annotator", "lead", "evaluator", "admin", "norole"]

# url name -> (arguments, roles allowed, status for them)
PAGES = {
    "evaluation:system_list": ("", {"admin"}, 200),
    "evaluation:system_create": ("", {"admin"}, 200),
    "evaluation:system_edit": ("system", {"admin"}, 200),
    "evaluation:system_delete": ("system", {"admin"}, 200),
    "evaluation:output_import": ("system", {"admin"}, 200),
    "evaluation:judge_config_list": ("", {"admin"}, 200),
    "evaluation:judge_config_create": ("", {"admin"}, 200),
    "evaluation:judge_config_edit": ("config", {"admin"}, 200),
    "evaluation:judge_run_list": ("", {"admin"}, 200),
    "evaluation:judge_run_detail": ("run", {"admin"}, 200),
    "evaluation:rubric_sample_list": ("", {"admin"}, 200),
    "evaluation:rubric_sample_detail": ("sample", {"admin"}, 200),
    "evaluation:leaderboard": ("", {"admin"}, 200),
    "evaluation:leaderboard_csv": ("", {"admin"}, 200),
    "evaluation:leaderboard_tex": ("", {"admin"}, 200),
    "evaluation:error_propagation": ("", {"admin"}, 200),
    "evaluation:item_list": ("", {"admin"}, 200),
    "evaluation:item_detail": ("item", {"admin"}, 200),
    "evaluation:output_metrics": ("", {"admin"}, 200),
    "evaluation:agreement": ("", {"admin"}, 200),
    "evaluation:my_rubric_samples": ("", {"evaluator"}, 200),
    "evaluation:rubric_next": ("sample", {"evaluator"}, 302),
    "evaluation:rubric_score": ("sample_output", {"evaluator"}, 200),
}
ACTIONS = {
    "evaluation:judge_run_rerun": ("run", {"admin"}, 302),
    "evaluation:system_delete": ("system", {"admin"}, 302),
    "evaluation:rubric_score": ("sample_output", {"evaluator"}, 200),
    "evaluation:judge_run_list": ("", {"admin"}, 200),
}


@pytest.fixture
def world(users: dict[str, User]) -> dict[str, list[object]]:
    system = System.objects.create(name="S", text_only=True)
    item = BenchmarkItemFactory.create(external_id="EE-1")
    output = ModelOutputFactory.create(system=system, item=item)
    config = JudgeConfigFactory.create(name="judge")
    JudgementFactory.create(output=output, stage="perception", judge_config=config, score=7)
    run = start_judge_run(system, "echoeval-v1", config, started_by=users["admin"])
    sample: RubricSample = draw_rubric_sample(
        name="pilot", benchmark_version="echoeval-v1", n_items=1, evaluators=[users["evaluator"]]
    )
    return {
        "": [],
        "system": [system.pk],
        "config": [config.pk],
        "run": [run.pk],
        "sample": [sample.pk],
        "item": [item.pk],
        "sample_output": [sample.pk, output.public_id],
    }


@pytest.mark.parametrize("url_name", sorted(PAGES))
def test_pages_open_only_for_their_roles(client, client_for, world, url_name: str) -> None:
    arguments, allowed, status = PAGES[url_name]
    url = reverse(url_name, args=world[arguments])
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("login"))
    got = {role: client_for(role).get(url).status_code for role in ROLES}
    assert got == {role: status if role in allowed else 403 for role in ROLES}


@pytest.mark.parametrize("url_name", sorted(ACTIONS))
def test_actions_are_refused_to_other_roles(client, client_for, world, url_name: str) -> None:
    arguments, allowed, status = ACTIONS[url_name]
    url = reverse(url_name, args=world[arguments])
    assert client.post(url, {}).status_code == 302
    refused = [role for role in ROLES if role not in allowed]
    assert {role: client_for(role).post(url, {}).status_code for role in refused} == dict.fromkeys(
        refused, 403
    )
    for role in allowed:
        assert client_for(role).post(url, {}).status_code == status

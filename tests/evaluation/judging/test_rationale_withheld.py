"""An admin still labelling an item reads nothing a judge wrote or scored against its gold (issue 40).

A judge is shown the item's gold, and its rationale, raw answer and error can quote or paraphrase
it; its scores of an output betray it too. The test walks every judge-run, rubric and results page, API
and export as an admin who also annotates (and scores rubric samples), with the
ids of the run, the item, the judge, the sample and the output filled in: while their annotation of
the item is open nothing of it appears and the judge-run pages say it is withheld; once they submit
it, it does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest
from django.test import Client
from django.urls import get_resolver, reverse

from annotation.gold.access import gold_withheld_items
from annotation.gold.models import GoldReference
from annotation.labelling.models import Annotation
from evaluation.judging.models import Judgement, JudgeRun, RubricSample, RubricSampleEntry
from tests.annotation.labelling.support import LabellingItemFactory, assign, perception, submitted, tom
from tests.factories import (
    AnnotationFactory,
    DialogueFactory,
    JudgeConfigFactory,
    JudgementFactory,
    ModelOutputFactory,
)
from tests.support.routes import site_patterns
from webapp.models import User
from webapp.roles import Role, grant_role

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]

RATIONALE = "Rationale-quote: the gold says she needs to be heard"
RAW = "Raw-quote: gold latent need is to be heard"
ERROR = "Error-quote: sub-score the gold reads angry"
GOLD = "Gold-reply: that sounds exhausting, I am here"
QUOTES = (RATIONALE, RAW, ERROR, GOLD)
VERSION = "echoeval-v1"
# Where judgements are shown: the judging pages and API (runs, rubric samples) and the results.
SIDES = ("evaluation.judging.", "evaluation.results.")


def _answers(client: Client, urls: list[str]) -> dict[str, tuple[int, str]]:
    answers = {}
    for url in urls:
        response = client.get(url)
        content = (
            b"".join(response.streaming_content)  # type: ignore[attr-defined]
            if getattr(response, "streaming", False)
            else response.content
        )
        answers[url] = (response.status_code, content.decode("utf-8", "replace"))
    return answers


def _urls(values: dict[str, object]) -> list[str]:
    """Every route of the judging and results side whose ids `values` fills, with the results pages
    read for the run's version and judge."""
    urls = []
    for _route, pattern, namespace in site_patterns(get_resolver()):
        names = set(pattern.pattern.converters)
        module = getattr(pattern.callback, "__module__", "")
        if module.startswith(SIDES) and pattern.name and not names - set(values):
            urls.append(reverse(f"{namespace}{pattern.name}", kwargs={name: values[name] for name in names}))
    query = f"?version={VERSION}&judge={values['config_id']}"
    return [
        *urls,
        *(
            reverse(f"evaluation:{name}", kwargs=kwargs) + query
            for name, kwargs in (
                ("item_detail", {"item_id": values["item_id"]}),
                ("item_list", {}),
                ("leaderboard", {}),
                ("leaderboard_csv", {}),
                ("api_leaderboard", {}),
                ("api_error_propagation", {}),
                ("api_judge_run_results", {"pk": values["pk"]}),
            )
        ),
    ]


def _judged_item(admin: User) -> tuple[JudgeRun, dict[str, object]]:
    """Return a run with a valid judgement and a judge error of one output of an item with gold, in
    a rubric sample the admin scores, and the ids that fill the routes."""
    item = LabellingItemFactory.create(recording=None)
    GoldReference.objects.add_current_version(
        item, perception=perception(), tom=tom(), reference_response=GOLD
    )
    output = ModelOutputFactory.create(item=item, benchmark_version=VERSION)
    judge = JudgeConfigFactory.create()
    run = JudgeRun.objects.create(system=output.system, benchmark_version=VERSION, judge_config=judge)
    JudgementFactory.create(
        output=output, judge_config=judge, run=run, score=7.0, rationale=RATIONALE, subscores={"emotion": 3}
    )
    JudgementFactory.create(
        output=output,
        judge_config=judge,
        run=run,
        stage="reasoning",
        error_kind="rubric",
        error=ERROR,
        raw_text=RAW,
    )
    sample = RubricSample.objects.create(name="blind", benchmark_version=VERSION)
    sample.evaluators.add(admin)
    RubricSampleEntry.objects.create(sample=sample, output=output, position=0)
    values = {
        "run_id": run.pk,
        "pk": run.pk,
        "item_id": item.pk,
        "config_id": judge.pk,
        "sample_id": sample.pk,
        "public_id": output.public_id,
    }
    return run, values


def test_nothing_the_judge_wrote_of_the_item_shows_until_the_admin_submits_it(users: dict[str, User]) -> None:
    admin = users["admin"]
    grant_role(admin, Role.ANNOTATOR)
    grant_role(admin, Role.EVALUATOR)
    run, values = _judged_item(admin)
    (own,) = assign(GoldReference.objects.get().item, admin)
    client = Client()
    client.force_login(admin)
    urls = _urls(values)
    page = reverse("evaluation:judge_run_detail", args=[run.pk])
    api = reverse("evaluation:api_judge_run_results", args=[run.pk])
    rubric = reverse("evaluation:rubric_score", args=[values["sample_id"], values["public_id"]])
    query = f"?version={VERSION}&judge={values['config_id']}"
    item_page = reverse("evaluation:item_detail", args=[values["item_id"]]) + query

    # given the admin's annotation of the item is open: nothing of what was judged against its gold
    labelling = _answers(client, urls)

    leaks = [(url, quote) for url, (_, text) in labelling.items() for quote in QUOTES if quote in text]
    assert leaks == []
    assert sum(status == 200 for status, _ in labelling.values()) > 15  # the walk reached real pages
    assert "withheld while you label this item" in labelling[page][1]
    assert "The reference is withheld while you label this item" in labelling[rubric][1]
    assert labelling[item_page][0] == 403
    rows = json.loads(labelling[api][1])
    rows = rows.get("results", rows) if isinstance(rows, dict) else rows
    assert {row["stage"] for row in rows} == {"perception", "reasoning"}
    for row in rows:
        assert row["withheld"] == "withheld while you label this item"
        assert (row["score"], row["raw_sum"], row["subscores"], row["rationale"], row["error"]) == (
            None,
            None,
            {},
            "",
            "",
        )
    assert Judgement.objects.filter(rationale=RATIONALE, score=7.0).exists()  # withheld, never changed

    # when they submit it
    submitted(own)
    labelled = _answers(client, [page, api, rubric, item_page])

    # then every quote is back where it belongs
    assert RAW in labelled[page][1] and ERROR in labelled[page][1]
    assert RATIONALE in labelled[api][1] and ERROR in labelled[api][1]
    assert '"withheld":"withheld' not in re.sub(r"\s", "", labelled[api][1])
    assert GOLD in labelled[rubric][1]
    assert RATIONALE in labelled[item_page][1] and GOLD in labelled[item_page][1]


def test_a_later_turns_judgement_is_withheld_while_the_admin_labels_an_earlier_turn(
    users: dict[str, User], client_for: Callable[[str], Client]
) -> None:
    # A later turn's judge read the earlier turns' gold perception: its rationale can paraphrase it.
    admin = users["admin"]
    grant_role(admin, Role.ANNOTATOR)
    first, second = DialogueFactory.create(turns=2).turns.order_by("turn")
    output = ModelOutputFactory.create(item=second, benchmark_version=VERSION)
    judgement = JudgementFactory.create(output=output, score=6.0, rationale=RATIONALE)
    run = JudgeRun.objects.create(
        system=output.system, benchmark_version=VERSION, judge_config=judgement.judge_config
    )
    Judgement.objects.filter(pk=judgement.pk).update(run=run)
    own = AnnotationFactory.create(item=first, annotator=admin, status=Annotation.Status.DRAFT)
    client = client_for("admin")
    api = reverse("evaluation:api_judge_run_results", args=[run.pk])
    page = reverse("evaluation:item_detail", args=[second.pk]) + f"?version={VERSION}"

    labelling = [client.get(url).content.decode() for url in (api, page)]

    assert all(RATIONALE not in text for text in labelling)
    assert 'data-testid="judgement-withheld"' in labelling[1]
    assert gold_withheld_items(admin) == {first.pk, second.pk}

    Annotation.objects.filter(pk=own.pk).update(status=Annotation.Status.SUBMITTED)

    assert all(RATIONALE in client.get(url).content.decode() for url in (api, page))
    assert gold_withheld_items(admin) == frozenset()

import pytest

from evaluation.judging.rubrics import automatic_flags, normalise_strategy, strategy_names
from webapp.lib.vocabulary import DEFAULT_STRATEGIES, STRATEGY_SYNONYMS

GOLD = {
    "recommended_strategies": ["emotional validation", "reassurance"],
    "not_recommended_strategies": ["advice"],
}
FULL_REASONING = {
    "context": "She is sarcastic about the cancelled trip.",
    "latent_need": "To feel her disappointment is legitimate.",
    "core_demand": "Acknowledge the letdown before anything else.",
    "strategy": ["Validate feelings", "Reassure"],
}


@pytest.mark.parametrize(
    ("stage", "output", "flags"),
    [
        ("perception", "", {"empty_or_off_topic"}),
        ("perception", "  \n", {"empty_or_off_topic"}),
        ("shift_perception", None, {"empty_or_off_task"}),
        # empty reasoning misses both parts
        ("reasoning", "", {"missing_mental_state", "missing_strategy"}),
        ("reasoning", {"context": "", "strategy": []}, {"missing_mental_state", "missing_strategy"}),
        ("response_content", "", {"empty_response"}),
        ("response_audio", None, {"unintelligible"}),
    ],
)
def test_empty_output_earns_the_stage_empty_flag(stage, output, flags):
    assert automatic_flags(stage, output, GOLD) == flags


def test_non_empty_text_output_raises_no_flag():
    assert automatic_flags("perception", "Sad, low energy, slow speech.", GOLD) == set()
    assert automatic_flags("reasoning", "free-text reasoning the judge must read", GOLD) == set()


def test_complete_reasoning_with_recommended_strategies_raises_no_flag():
    assert automatic_flags("reasoning", FULL_REASONING, GOLD) == set()


@pytest.mark.parametrize("field", ["context", "latent_need", "core_demand"])
def test_a_blank_mental_state_field_is_missing_mental_state(field):
    assert automatic_flags("reasoning", {**FULL_REASONING, field: " "}, GOLD) == {"missing_mental_state"}


def test_no_strategy_is_missing_strategy_not_a_strategy_mismatch():
    without_strategy = {k: v for k, v in FULL_REASONING.items() if k != "strategy"}
    assert automatic_flags("reasoning", without_strategy, GOLD) == {"missing_strategy"}
    assert automatic_flags("reasoning", {**FULL_REASONING, "strategy": [" "]}, GOLD) == {"missing_strategy"}


def test_a_missing_field_of_each_part_raises_both_flags():
    output = {**FULL_REASONING, "core_demand": "", "strategy": None}
    assert automatic_flags("reasoning", output, GOLD) == {"missing_mental_state", "missing_strategy"}


def test_recommending_a_not_recommended_strategy_is_flagged_through_synonyms():
    # "give advice" and gold "advice" are both guidance; "validation" still overlaps the recommended.
    output = {**FULL_REASONING, "strategy": "validation; give advice"}
    assert automatic_flags("reasoning", output, GOLD) == {"recommends_not_recommended"}


def test_wrong_direction_and_no_overlap_together():
    output = {**FULL_REASONING, "strategy": ["Problem solving"]}
    assert automatic_flags("reasoning", output, GOLD) == {
        "recommends_not_recommended",
        "no_recommended_overlap",
    }


def test_no_overlap_with_recommended_strategies():
    output = {**FULL_REASONING, "strategy": ["humour"]}
    assert automatic_flags("reasoning", output, GOLD) == {"no_recommended_overlap"}


def test_strategies_outside_the_taxonomy_match_when_spelled_alike():
    gold = {"recommended_strategies": ["Radical acceptance"], "not_recommended_strategies": []}
    output = {**FULL_REASONING, "strategy": ["radical-acceptance"]}
    assert automatic_flags("reasoning", output, gold) == set()


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("Reflection of Feelings", "emotional_validation"),
        ("Affirmation-and-Reassurance", "reassurance"),
        ("providing suggestions", "guidance"),
        ("Cognitive reframing", "cognitive_reframing"),
        ("emotional_validation", "emotional_validation"),
        ("Radical  Acceptance!", "radical_acceptance"),
    ],
)
def test_normalise_strategy(name, canonical):
    assert normalise_strategy(name) == canonical


def test_strategy_names_split_strings_and_accept_lists():
    assert strategy_names("validation, reassure\nadvice") == {
        "emotional_validation",
        "reassurance",
        "guidance",
    }
    assert strategy_names(["validation", ""]) == {"emotional_validation"}
    assert strategy_names(None) == set()


@pytest.mark.parametrize(("slug", "name"), DEFAULT_STRATEGIES)
def test_every_seeded_strategy_slug_and_name_is_a_canonical_strategy(slug: str, name: str) -> None:
    # Gold references hold the seeded slugs; a slug outside the canonical names would never meet
    # a model's phrasing of the same strategy.
    assert normalise_strategy(slug) in STRATEGY_SYNONYMS
    assert normalise_strategy(name) == normalise_strategy(slug)


def test_a_gold_suggestions_guidance_slug_meets_a_models_advice() -> None:
    gold = {"recommended_strategies": ["suggestions-guidance"], "not_recommended_strategies": []}
    output = {**FULL_REASONING, "strategy": ["Give advice"]}
    assert automatic_flags("reasoning", output, gold) == set()

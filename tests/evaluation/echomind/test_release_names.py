"""A release's attribute names mapped onto the taxonomy (pure): EchoMind's own spellings, case,
spacing and separators, synonyms, and a clear error naming the nearest names for a name that
matches nothing."""

from __future__ import annotations

import pytest

from evaluation.echomind.taxonomy import (
    DEFAULT_TAXONOMY,
    ENVIRONMENT,
    PARALINGUISTIC,
    SPEAKER,
    SYNONYMS,
    AttributeNames,
    UnknownName,
    name_key,
)

NAMES = AttributeNames((attribute.code, attribute.label) for attribute in DEFAULT_TAXONOMY)


def test_the_paper_s_lists_are_seeded_19_cues_21_sounds_and_the_speaker_s_age_and_gender() -> None:
    counts = {
        coarse: sum(a.coarse == coarse for a in DEFAULT_TAXONOMY) for coarse in (PARALINGUISTIC, ENVIRONMENT)
    }
    assert counts == {PARALINGUISTIC: 19, ENVIRONMENT: 21}
    speaker = {
        fine: [a.code for a in DEFAULT_TAXONOMY if a.coarse == SPEAKER and a.fine == fine]
        for fine in ("gender", "age")
    }
    assert speaker == {"gender": ["male", "female"], "age": ["child", "adult", "elderly"]}


@pytest.mark.parametrize(
    ("published", "code"),
    [
        # The names EchoMind's demo recordings carry (id_<n>_<attribute>_<topic>_<role>.wav).
        ("angry", "angry_tone"),
        ("happy", "happy_tone"),
        ("sad", "sad_tone"),
        ("fast", "fast_pace"),
        ("slow", "slow_pace"),
        ("tired", "vocal_fatigue"),
        ("breath", "breathless"),
        ("shout", "shouting"),
        ("sigh", "sigh"),
        ("laughter", "laughter"),
        ("sobbing", "sobbing"),
        ("moan", "moan"),
        ("elderly", "elderly"),
        ("female", "female"),
        ("sound of wind blowing", "wind"),
        ("sound of thunderstorm and thunder", "thunderstorm"),
        # Case, spacing, underscores and hyphens do not matter; labels and codes match too.
        ("Angry Tone", "angry_tone"),
        ("ANGRY_TONE", "angry_tone"),
        ("  sea-waves ", "sea_waves"),
        ("Dogs barking", "dogs_barking"),
        ("the sound of rain", "rain"),
        ("car horn", "honking"),
        ("Male", "male"),
    ],
)
def test_a_release_s_names_map_onto_the_taxonomy(published: str, code: str) -> None:
    assert NAMES.code_of(published) == code


def test_a_name_that_matches_nothing_is_named_with_the_nearest_known_names() -> None:
    with pytest.raises(UnknownName) as raised:
        NAMES.code_of("angri tone")
    assert raised.value.name == "angri tone"
    assert raised.value.nearest[0] == "Angry tone (angry_tone)"
    assert str(raised.value).startswith(
        "the attribute 'angri tone' matches no attribute of the taxonomy (nearest: "
    )
    with pytest.raises(UnknownName, match="no known name is close"):
        NAMES.code_of("xylophone solo")


def test_every_synonym_names_one_attribute_of_the_default_and_no_name_is_claimed_twice() -> None:
    codes = {a.code for a in DEFAULT_TAXONOMY}
    assert set(SYNONYMS) <= codes
    owner: dict[str, str] = {}
    for attribute in DEFAULT_TAXONOMY:
        for name in (attribute.code, attribute.label, *SYNONYMS.get(attribute.code, ())):
            assert owner.setdefault(name_key(name), attribute.code) == attribute.code, name


def test_a_lab_s_own_taxonomy_matches_by_its_codes_and_labels_and_synonyms_of_absent_codes_do_not() -> None:
    own = AttributeNames([("purring", "Purring cat"), ("angry_tone", "Angry tone")])
    assert own.code_of("Purring Cat") == own.code_of("purring") == "purring"
    assert own.code_of("angry") == "angry_tone"
    with pytest.raises(UnknownName):
        own.code_of("sound of wind blowing")

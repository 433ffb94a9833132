"""Reading the workbench form back into label documents."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from annotation.labelling.forms import FormError, labels_from_form, version_from_form
from tests.annotation.labelling.support import form_data, perception, tom


def query(data: dict[str, str]) -> QueryDict:
    result = QueryDict(mutable=True)
    for key, value in data.items():
        result[key] = value
    return result


def test_the_form_round_trips_complete_documents() -> None:
    data = query(form_data(perception(), tom(), version=4))
    assert labels_from_form(data) == (perception(), tom())
    assert version_from_form(data) == 4


def test_segments_come_back_in_time_order_and_a_cleared_conflict_drops_its_kind() -> None:
    segments = [
        {"start": 1.0, "end": 2.0, "emotion": "sad", "words": "Monday"},
        {"start": 0.0, "end": 1.0, "emotion": "happy", "words": "Oh great"},
    ]
    data = form_data(perception(emotion_segments=segments), tom(), version=1)
    del data["p_modality_conflict"]
    parsed, _ = labels_from_form(query(data))
    assert [segment["emotion"] for segment in parsed["emotion_segments"]] == ["happy", "sad"]
    assert parsed["modality_conflict"] is False
    assert parsed["conflict_kind"] == ""


def test_constraints_are_one_per_line_without_repeats() -> None:
    data = form_data(perception(), tom(), version=1)
    data["t_constraints"] = "over-analysis\n\n  lecturing or moralising \nover-analysis"
    _, parsed = labels_from_form(query(data))
    assert parsed["constraints"] == ["over-analysis", "lecturing or moralising"]


def test_broken_hidden_fields_are_form_errors() -> None:
    data = form_data(perception(), tom(), version=1)
    data["p_stressed_words"] = "{not json"
    with pytest.raises(FormError, match=r"^Stressed words could not be read; reload the page\.$"):
        labels_from_form(query(data))
    with pytest.raises(FormError):
        version_from_form(query({"version": "abc"}))

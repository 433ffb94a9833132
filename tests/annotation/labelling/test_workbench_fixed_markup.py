"""The workbench's word buttons, and constraint chips, made in Python, are the markup
its template loops printed (issue 27), escaping included; so are the choice groups and the
strategy table (issue 46)."""

from __future__ import annotations

from typing import Any

from django.template import Context, Template

from annotation.labelling.markup import (
    CONSTRAINT_CHIPS_HTML,
    choice_group,
    script_word_buttons,
    strategy_table_rows,
)
from annotation.labelling.models import Strategy
from annotation.labelling.schema import SUGGESTED_CONSTRAINTS, script_words

# The loops as workbench.html had them.
WORDS_LOOP = (
    '{% for index, word in words %}<button type="button" class="word" data-index="{{ index }}" '
    'data-word="{{ word }}" aria-pressed="false"{% if annotation.is_submitted %} disabled{% endif %}>'
    "{{ word }}</button>{% endfor %}"
)
CHIPS_LOOP = (
    '{% for constraint in suggested_constraints %}<button type="button" data-append-line="{{ constraint }}" '
    'data-target="t_constraints">+ {{ constraint }}</button>{% endfor %}'
)


# _choices.html, which workbench.html included once per choice group, and its strategy table loop.
CHOICES_INCLUDE = """<fieldset class="group{% if problem %} has-problem{% endif %}" data-field="{{ name }}">
  <legend>{{ label }}{% if hint %} <span class="key-hint">{{ hint }}</span>{% endif %}</legend>
  <div class="choices">
    {% for option in options %}<label><input type="radio" name="p_{{ name }}" value="{{ option }}"{% if option == value %} checked{% endif %}>{{ option }}</label>{% endfor %}
  </div>
  {% if suggestion %}<span class="suggested" data-testid="suggestion-{{ name }}">analysis suggests {{ suggestion }}{% if accuracy %} <small class="muted">(a draft: right on {{ accuracy }} of the bench set)</small>{% endif %}</span>{% endif %}
</fieldset>
"""
STRATEGY_LOOP = """{% for strategy, choice in strategy_rows %}
              <tr><td title="{{ strategy.description }}">{{ strategy.name }}</td>
                <td><input type="radio" name="s_{{ strategy.slug }}" value="recommended" aria-label="Recommend {{ strategy.name }}"{% if choice == "recommended" %} checked{% endif %}></td>
                <td><input type="radio" name="s_{{ strategy.slug }}" value="not_recommended" aria-label="Do not recommend {{ strategy.name }}"{% if choice == "not_recommended" %} checked{% endif %}></td>
                <td><input type="radio" name="s_{{ strategy.slug }}" value="" aria-label="Neither for {{ strategy.name }}"{% if not choice %} checked{% endif %}></td></tr>
            {% endfor %}"""


def _rendered(loop: str, **context: object) -> str:
    return Template(loop).render(Context(context))


def test_word_buttons_are_what_the_template_printed() -> None:
    text = 'Oh "great" & <another> Monday, I\'m fine... really?'
    for submitted in (False, True):
        printed = _rendered(
            WORDS_LOOP,
            words=list(enumerate(script_words(text))),
            annotation={"is_submitted": submitted},
        )
        assert script_word_buttons(text, disabled=submitted) == printed


def test_the_fixed_lists_are_what_the_template_printed() -> None:
    assert _rendered(CHIPS_LOOP, suggested_constraints=SUGGESTED_CONSTRAINTS) == CONSTRAINT_CHIPS_HTML


def test_choice_groups_are_what_the_include_printed() -> None:
    options = ("calm", "angry", 'a "quoted" <one> & more')
    cases: list[dict[str, Any]] = [
        {"value": "angry"},
        {"value": None, "hint": "1–7", "problem": "Choose one"},
        {"value": 'a "quoted" <one> & more', "suggestion": "angry", "accuracy": "59%"},
        {"value": "", "suggestion": "<b>high</b>", "hint": "Alt+<1>"},
        {"value": "nothing of these", "accuracy": "59%"},
    ]
    for case in cases:
        context = {"name": "emotion", "label": "Primary <emotion>", "options": options, **case}
        printed = _rendered(CHOICES_INCLUDE, **context)
        made = choice_group(
            "emotion",
            "Primary <emotion>",
            options,
            case["value"],
            hint=str(case.get("hint", "")),
            problem=str(case.get("problem", "")),
            suggestion=case.get("suggestion", ""),
            accuracy=str(case.get("accuracy", "")),
        )
        assert made == printed


def test_strategy_rows_are_what_the_table_loop_printed() -> None:
    rows = [
        (
            Strategy(
                slug="emotional-validation",
                name="Emotional validation",
                description='Say "I hear you" & <mean it>',
            ),
            "recommended",
        ),
        (Strategy(slug="information", name="Information <facts>", description=""), "not_recommended"),
        (Strategy(slug="humour", name="Humour", description="Light"), ""),
    ]
    assert strategy_table_rows(rows) == _rendered(STRATEGY_LOOP, strategy_rows=rows)
    assert strategy_table_rows([]) == _rendered(STRATEGY_LOOP, strategy_rows=[])

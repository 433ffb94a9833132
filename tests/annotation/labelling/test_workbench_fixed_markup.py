"""The workbench's word buttons, and constraint chips, made in Python, are the markup
its template loops printed (issue 27), escaping included."""

from __future__ import annotations

from django.template import Context, Template

from annotation.labelling.schema import SUGGESTED_CONSTRAINTS, script_words
from annotation.labelling.views import (
    CONSTRAINT_CHIPS_HTML,
    script_word_buttons,
)

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

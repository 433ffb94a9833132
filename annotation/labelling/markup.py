"""The workbench's markup made in Python: the word buttons, constraint chips, choice groups and
strategy table its template printed node by node on every request (issues 27 and 46). Each is the
template's markup byte for byte, escaping included (tests/annotation/labelling/test_workbench_fixed_markup.py)."""

from __future__ import annotations

from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from annotation.audio.voice_drafts import DRAFT_ACCURACY
from annotation.labelling.models import Annotation, Strategy
from annotation.labelling.schema import CHOICES, SUGGESTED_CONSTRAINTS, LabelProblem, script_words
from webapp.models import ShortcutKeys

# The workbench's fixed lists as HTML made once per process: the same markup its template loops
# printed node by node on every request, a quarter of the page's template nodes (issue 27).
CONSTRAINT_CHIPS_HTML = format_html_join(
    "",
    '<button type="button" data-append-line="{}" data-target="t_constraints">+ {}</button>',
    ((constraint, constraint) for constraint in SUGGESTED_CONSTRAINTS),
)


def script_word_buttons(text: str, *, disabled: bool) -> SafeString:
    """Return the script's words as the stress picker's buttons (one loop in Python, not ~80
    template nodes); disabled once the annotation is submitted."""
    state = mark_safe(" disabled") if disabled else ""
    return format_html_join(
        "",
        '<button type="button" class="word" data-index="{}" data-word="{}" aria-pressed="false"{}>{}</button>',
        ((index, word, state, word) for index, word in enumerate(script_words(text))),
    )


# The perception form's choice groups: (name, legend, has a key hint, has an analysis suggestion).
CHOICE_GROUPS = (
    ("polarity", "Polarity", True, False),
    ("emotion", "Primary emotion", True, False),
    ("intensity", "Intensity", True, True),
    ("pitch", "Pitch", False, True),
    ("energy", "Energy", False, True),
    ("rate", "Speaking rate", False, True),
    ("intonation", "Intonation", False, True),
)
_CHECKED = mark_safe(" checked")


def choice_group(
    name: str,
    label: str,
    options: tuple[str, ...],
    value: object,
    *,
    hint: str = "",
    problem: str = "",
    suggestion: object = "",
    accuracy: str = "",
) -> SafeString:
    """Return one choice group of the workbench's perception form: the markup its template
    include printed, made in Python (one call, not ~40 template nodes a group; issue 46)."""
    radios = format_html_join(
        "",
        '<label><input type="radio" name="p_{}" value="{}"{}>{}</label>',
        ((name, option, _CHECKED if option == value else "", option) for option in options),
    )
    suggested: SafeString | str = ""
    if suggestion:
        measured = (
            format_html(' <small class="muted">(a draft: right on {} of the bench set)</small>', accuracy)
            if accuracy
            else ""
        )
        suggested = format_html(
            '<span class="suggested" data-testid="suggestion-{}">analysis suggests {}{}</span>',
            name,
            suggestion,
            measured,
        )
    return format_html(
        '<fieldset class="group{}" data-field="{}">\n  <legend>{}{}</legend>\n  <div class="choices">\n'
        "    {}\n  </div>\n  {}\n</fieldset>\n",
        " has-problem" if problem else "",
        name,
        label,
        format_html(' <span class="key-hint">{}</span>', hint) if hint else "",
        radios,
        suggested,
    )


def strategy_table_rows(rows: list[tuple[Strategy, str]]) -> SafeString:
    """Return the strategy table's rows, each with its three radios, as its template loop printed
    them (one call, not ~12 template nodes a strategy; issue 46)."""
    return format_html_join(
        "",
        '\n              <tr><td title="{}">{}</td>\n'
        '                <td><input type="radio" name="s_{}" value="recommended" aria-label="Recommend {}"{}></td>\n'
        '                <td><input type="radio" name="s_{}" value="not_recommended" aria-label="Do not recommend {}"{}></td>\n'
        '                <td><input type="radio" name="s_{}" value="" aria-label="Neither for {}"{}></td></tr>\n'
        "            ",
        (
            (
                strategy.description,
                strategy.name,
                strategy.slug,
                strategy.name,
                _CHECKED if choice == "recommended" else "",
                strategy.slug,
                strategy.name,
                _CHECKED if choice == "not_recommended" else "",
                strategy.slug,
                strategy.name,
                "" if choice else _CHECKED,
            )
            for strategy, choice in rows
        ),
    )


# The keys beside the polarity, emotion and intensity choices as the person's shortcut setting
# makes them (static/js/shortcuts.js): with Alt required, Alt+1-3 is the 1-3 keys (an emotion).
CHOICE_KEY_HINTS: dict[str, dict[str, str]] = {
    ShortcutKeys.SINGLE: {"polarity": "Shift+1–4", "emotion": "1–7", "intensity": "Alt+1–3 or i"},
    ShortcutKeys.MODIFIER: {
        "polarity": "Alt+Shift+1–4",
        "emotion": "Alt+1–7",
        "intensity": "Alt+I, Alt+Shift+I",
    },
    ShortcutKeys.OFF: {},
}


def choice_groups(
    annotation: Annotation, perception: dict[str, Any], problems: list[LabelProblem]
) -> dict[str, SafeString]:
    """Return the perception form's choice groups by name, with the person's key hints, the
    analysis suggestions and the posted problems (`choice_group`)."""
    hints = CHOICE_KEY_HINTS.get(annotation.annotator.shortcut_keys, {})
    problem_of = problems_by_field(problems, "perception")
    suggestions = annotation.suggestions or {}
    return {
        name: choice_group(
            name,
            label,
            CHOICES[name],
            perception.get(name),
            hint=hints.get(name, "") if hinted else "",
            problem=problem_of.get(name, ""),
            suggestion=suggestions.get(name, "") if suggested else "",
            accuracy=f"{DRAFT_ACCURACY[name]:.0%}" if suggested and name in DRAFT_ACCURACY else "",
        )
        for name, label, hinted, suggested in CHOICE_GROUPS
    }


def problems_by_field(problems: list[LabelProblem], section: str) -> dict[str, str]:
    """Return {field name: message} for one document's problems, for highlighting the form."""
    prefix = f"{section}."
    return {p.field.removeprefix(prefix): p.message for p in problems if p.field.startswith(prefix)}

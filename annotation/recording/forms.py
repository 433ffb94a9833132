"""Forms of the recording pages: verdicts, item import, bulk assignment and reviewer overrides."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import QuerySet

from annotation.recording.items import ASSIGNABLE_STATES
from annotation.recording.models import Item, RejectReason, Review, Scenario, Split
from annotation.recording.reviews import MAX_COMMENT_CHARS
from webapp.models import User
from webapp.roles import Role, users_with_role


class VerdictForm(forms.Form):
    verdict = forms.ChoiceField(
        choices=[(Review.Verdict.ACCEPT, "Accept"), (Review.Verdict.REJECT, "Reject")],
        widget=forms.RadioSelect,
    )
    reasons = forms.MultipleChoiceField(
        choices=RejectReason.choices, required=False, widget=forms.CheckboxSelectMultiple
    )
    comment = forms.CharField(
        required=False, max_length=MAX_COMMENT_CHARS, widget=forms.Textarea(attrs={"rows": 2})
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("verdict") == Review.Verdict.REJECT and not cleaned.get("reasons"):
            self.add_error("reasons", "A reject needs at least one reason.")
        return cleaned


class ItemImportForm(forms.Form):
    file = forms.FileField(help_text="CSV (with a header row) or JSONL, UTF-8")
    import_valid_rows = forms.BooleanField(
        required=False, label="Import the valid rows even if some rows have problems"
    )


class AssignmentForm(forms.Form):
    """Which items to hand out (a filter) and to whom."""

    WHICH_CHOICES = [
        ("unassigned", "Scripts nobody has yet"),
        ("from_actor", "Scripts of one actor (reassign)"),
        ("dialogues", "Dialogues nobody has yet (each dialogue whole, to one actor)"),
    ]

    which = forms.ChoiceField(choices=WHICH_CHOICES, initial="unassigned", widget=forms.RadioSelect)
    from_actor = forms.ModelChoiceField(queryset=User.objects.none(), required=False, label="Current actor")
    scenarios = forms.MultipleChoiceField(
        choices=Scenario.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every scenario",
    )
    split = forms.ChoiceField(choices=[("", "Any split"), *Split.choices], required=False)
    limit = forms.IntegerField(
        min_value=1, required=False, help_text="At most this many scripts (by id); empty: all that match"
    )
    actors = forms.ModelMultipleChoiceField(
        queryset=User.objects.none(), widget=forms.CheckboxSelectMultiple, label="Give them to"
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        actors = users_with_role(Role.VOICE_ACTOR)
        self.fields["actors"].queryset = actors  # type: ignore[attr-defined]
        self.fields["from_actor"].queryset = actors  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("which") == "from_actor" and not cleaned.get("from_actor"):
            self.add_error("from_actor", "Choose whose scripts to reassign.")
        return cleaned

    def items(self) -> QuerySet[Item]:
        """Return the items the filter selects (call after is_valid)."""
        data = self.cleaned_data
        items = Item.objects.filter(state__in=ASSIGNABLE_STATES)
        if data["which"] == "unassigned":
            items = items.filter(actor__isnull=True)
        elif data["which"] == "dialogues":
            items = items.filter(actor__isnull=True, dialogue__isnull=False)
        else:
            items = items.filter(actor=data["from_actor"])
        if data["scenarios"]:
            items = items.filter(scenario__in=data["scenarios"])
        if data["split"]:
            items = items.filter(split=data["split"])
        items = items.order_by("external_id")
        if data["limit"]:
            items = Item.objects.filter(pk__in=items.values("pk")[: data["limit"]])
        return items


class ReviewerChoiceForm(forms.Form):
    """An admin's override: give a pending review (or a missing one) to this reviewer."""

    review = forms.IntegerField(required=False, widget=forms.HiddenInput)
    reviewer = forms.ModelChoiceField(queryset=User.objects.none(), label="Reviewer")

    def __init__(self, *args: Any, candidates: QuerySet[User], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["reviewer"].queryset = candidates  # type: ignore[attr-defined]

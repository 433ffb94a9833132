"""Forms of the dialogue pages."""

from __future__ import annotations

from django import forms


class DialogueImportForm(forms.Form):
    file = forms.FileField(help_text="JSONL, UTF-8: one dialogue per line")

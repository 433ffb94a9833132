"""Forms of the systems and output-import pages."""

from __future__ import annotations

from typing import Any

from django import forms

from evaluation.outputs.harnesses import ECHOSTUDIO, FORMAT_CHOICES
from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION, System


class SystemForm(forms.ModelForm):
    class Meta:
        model = System
        fields = ["name", "category", "version", "text_only"]


# A JSONL of outputs for every benchmark item is a few MB; far more is no output file.
MAX_ROWS_BYTES = 200 * 1024 * 1024


class OutputImportForm(forms.Form):
    benchmark_version = forms.CharField(max_length=64, initial=DEFAULT_BENCHMARK_VERSION)
    rows = forms.FileField(
        label="Outputs (JSONL)", help_text="One JSON object per line (see the format below)"
    )
    format_name = forms.ChoiceField(
        label="Format",
        choices=FORMAT_CHOICES,
        initial=ECHOSTUDIO,
        required=False,
        help_text="A harness's result file as the harness wrote it; its rows are placed on items "
        "by item_id, audio_sha256 or their question",
    )
    audio_zip = forms.FileField(label="Response audio (zip)", required=False)
    s3_prefix = forms.CharField(
        label="…or an S3 prefix", required=False, max_length=500, help_text="e.g. s3://bucket/runs/system-a/"
    )
    skip_invalid_rows = forms.BooleanField(
        required=False, help_text="Import the valid rows even when others have problems"
    )

    def clean_format_name(self) -> str:
        return self.cleaned_data.get("format_name") or ECHOSTUDIO  # scripts that predate it send none

    def clean_rows(self) -> Any:
        rows = self.cleaned_data["rows"]
        if rows is not None and rows.size > MAX_ROWS_BYTES:
            raise forms.ValidationError(
                f"The outputs file is {rows.size // (1024 * 1024)} MB; at most {MAX_ROWS_BYTES // (1024 * 1024)} MB "
                "are accepted."
            )
        return rows

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("audio_zip") and cleaned.get("s3_prefix"):
            raise forms.ValidationError("Give the audio as a zip or as an S3 prefix, not both.")
        prefix = cleaned.get("s3_prefix") or ""
        if prefix and not prefix.startswith("s3://"):
            self.add_error("s3_prefix", "An S3 prefix starts with s3://")
        return cleaned

"""Forms of the systems and output-import pages."""

from __future__ import annotations

from typing import Any

from django import forms

from evaluation.outputs.harnesses import ECHOSTUDIO, FORMAT_CHOICES
from evaluation.outputs.models import DEFAULT_BENCHMARK_VERSION, System
from webapp.storage import new_media_key, save_media


class SystemForm(forms.ModelForm):
    reference_voice = forms.FileField(
        required=False,
        label="Reference voice",
        help_text="A recording of the voice the system is meant to speak in (its TTS voice's prompt or a "
        "lab reference, a few seconds of clean speech): each spoken reply's speaker similarity is "
        "measured against it. A new file replaces the old; the replies are measured again.",
    )

    class Meta:
        model = System
        fields = ["name", "category", "version", "text_only"]

    def clean_reference_voice(self) -> bytes | None:
        """Return the upload as 16 kHz mono WAV bytes (None: keep the current reference)."""
        upload = self.cleaned_data.get("reference_voice")
        if not upload:
            return None
        from annotation.audio.upload import AudioRejected, normalise_upload

        try:
            return normalise_upload(upload.read(), upload.name).wav_bytes
        except AudioRejected as rejected:
            raise forms.ValidationError(rejected.reason) from rejected

    def save(self, commit: bool = True) -> System:
        wav = self.cleaned_data.get("reference_voice")
        if wav:
            self.instance.reference_voice_key = save_media(new_media_key("reference_voice", "wav"), wav)
        return super().save(commit)


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


class OutputFiguresForm(forms.Form):
    """The output drill-down's filter and sort (every field optional)."""

    system = forms.ModelChoiceField(queryset=System.objects.all(), required=False, empty_label="Every system")
    metric = forms.ChoiceField(required=False, label="Where")
    low = forms.FloatField(required=False, label="is at least")
    high = forms.FloatField(required=False, label="and at most")
    sort = forms.ChoiceField(required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from evaluation.outputs.audio_metrics import METRICS

        super().__init__(*args, **kwargs)
        metric, sort = self.fields["metric"], self.fields["sort"]
        assert isinstance(metric, forms.ChoiceField) and isinstance(sort, forms.ChoiceField)
        metric.choices = [("", "any measure"), *((m.key, m.label) for m in METRICS)]
        sort.choices = [
            ("", "item"),
            *(
                choice
                for m in METRICS
                for choice in (
                    (m.key, f"{m.label}, lowest first"),
                    (f"-{m.key}", f"{m.label}, highest first"),
                )
            ),
        ]

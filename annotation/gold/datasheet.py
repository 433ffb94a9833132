"""The datasheet an export for publication carries (DATASHEET.md), filled from the studio's records.

Its sections follow "Datasheets for Datasets" (Gebru et al.): motivation, composition, collection,
consent, licence, and the people behind the labels, with the agreement figures the gold page shows
(`annotation.gold.agreement.measures.load_agreement_report`). Every number is counted from the rows
the export holds, except agreement, which is the studio's over every submitted annotation.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, QuerySet, Sum
from django.utils import timezone

from annotation.gold.agreement.measures import load_agreement_report
from annotation.labelling.models import Annotation
from annotation.recording.consent.models import SCOPE_LABELS, SCOPES, ConsentRecord
from annotation.recording.models import Item, Review, Take
from webapp.models import User

DATASHEET_NAME = "DATASHEET.md"
DEFAULT_LICENCE = "CC BY-NC 4.0"
DEFAULT_MOTIVATION = (
    "EchoEval-style items for evaluating empathetic spoken dialogue models: scripted utterances "
    "recorded by voice actors, with adjudicated perception and Theory-of-Mind references."
)


@dataclass(frozen=True)
class Release:
    """What a publication export says about itself beyond what the records hold."""

    licence: str = DEFAULT_LICENCE
    motivation: str = DEFAULT_MOTIVATION


def _counts(rows: QuerySet[Item], field: str) -> str:
    counted = rows.order_by().values_list(field).annotate(n=Count("pk")).order_by(field)
    return ", ".join(f"{value or '—'}: {n}" for value, n in counted) or "none"


def datasheet(items: QuerySet[Item], release: Release, *, viewer: User | None = None) -> str:
    """Return the Markdown datasheet of the exported `items` (the export's own queryset)."""
    takes = Take.objects.filter(pk__in=items.values("recording_id"))
    n_items = items.count()
    seconds = takes.aggregate(total=Sum("duration_seconds"))["total"] or 0.0
    speakers = takes.values("actor_id").distinct().count()
    annotators = (
        Annotation.objects.submitted()
        .filter(item__in=items.values("pk"))
        .values("annotator_id")
        .distinct()
        .count()
    )
    reviewers = Review.objects.filter(take__in=takes).exclude(verdict=Review.Verdict.PENDING)
    n_reviewers = reviewers.values("reviewer_id").distinct().count()
    consents = ConsentRecord.objects.filter(pk__in=takes.values("consent_id"))
    versions = sorted(set(consents.values_list("text__version", flat=True)))
    legacy = takes.filter(consent__isnull=True).count()
    scope_lines = "\n".join(
        f"- {SCOPE_LABELS[scope]}: {takes.filter(**{f'consent__{scope}': True}).count()} of {takes.count()} takes"
        for scope in SCOPES
    )
    agreement = load_agreement_report(viewer) if viewer is not None else None
    agreement_lines = (
        "\n".join(
            f"- {figure.label} ({figure.measure}): "
            + (f"{figure.value:.3f} over {figure.n_items} items" if figure.value is not None else figure.note)
            for figure in agreement.fields
        )
        if agreement is not None and agreement.fields
        else "- not computed (no item has two or more submitted annotations)"
    )
    return f"""# Datasheet

Exported from EchoStudio on {timezone.now().date().isoformat()}.

## Motivation

{release.motivation}

## Composition

- Items: {n_items}, {takes.count()} with a recording: {seconds / 3600:.2f} hours of 16 kHz mono speech
- Splits: {_counts(items, "split")}
- Scenarios: {_counts(items, "scenario")}
- Target emotions: {_counts(items, "target_emotion")}
- Dialogue turns: {items.filter(dialogue__isnull=False).count()} of the items

## Collection

Scripts were recorded in the browser by {speakers} voice actor(s). Each take was reviewed blind
by three reviewers ({n_reviewers} reviewer(s) gave verdicts on these takes) and accepted after three
accepts. {annotators} annotator(s) labelled perception and Theory of Mind independently; a lead
annotator adjudicated the gold reference (`gold_version` in each row).

## Consent

Every recording here was made under consent to public release, recorded in the studio with the
consent text's version and date. Consent text version(s): {", ".join(f"v{v}" for v in versions) or "—"}.
Takes recorded before the studio kept consent records: {legacy} (each released under its
speaker's later consent to public release).
Scopes the recordings were given under:

{scope_lines}

A speaker who withdraws is left out of every later release.

## Licence

{release.licence}

## Agreement

Inter-annotator agreement over the studio's submitted annotations:

{agreement_lines}
"""

"""Models of the annotation app, split by workflow: recording/review and labelling/gold."""

from annotation.models.labels import (
    Annotation,
    AnnotationProject,
    AnnotationRevision,
    GoldReference,
    MachineDraft,
    Strategy,
)
from annotation.models.recording import (
    Emotion,
    Intensity,
    Item,
    RejectReason,
    Review,
    Scenario,
    Split,
    Take,
)

__all__ = [
    "Annotation",
    "AnnotationProject",
    "AnnotationRevision",
    "Emotion",
    "GoldReference",
    "Intensity",
    "Item",
    "MachineDraft",
    "RejectReason",
    "Review",
    "Scenario",
    "Split",
    "Strategy",
    "Take",
]

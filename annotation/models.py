"""The annotation app's models, for Django's registry only.

Each model lives in its workflow's subpackage (recording, labelling, gold); code imports it from
there, so that imports keep running one way. Django loads this module to register them all.
"""

from annotation.gold.models import GoldReference
from annotation.labelling.models import (
    Annotation,
    AnnotationProject,
    AnnotationRevision,
    MachineDraft,
    Strategy,
)
from annotation.recording.consent.models import ConsentRecord, ConsentText, TakeUse
from annotation.recording.models import Dialogue, Item, Review, Take

__all__ = [
    "Annotation",
    "AnnotationProject",
    "AnnotationRevision",
    "ConsentRecord",
    "ConsentText",
    "Dialogue",
    "GoldReference",
    "Item",
    "MachineDraft",
    "Review",
    "Strategy",
    "Take",
    "TakeUse",
]

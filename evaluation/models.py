"""The evaluation app's models, for Django's registry only.

Each model lives in its workflow's subpackage (outputs, judging, studies, echomind); code imports it from
there, so that imports keep running one way. Django loads this module to register them all.
"""

from evaluation.echomind.models import (
    Answer,
    Delivery,
    DeliverySet,
    Question,
    Reply,
    Transcript,
    VocalAttribute,
)
from evaluation.judging.models import (
    HumanJudgement,
    JudgeCacheEntry,
    JudgeConfig,
    Judgement,
    JudgeRun,
    RubricSample,
    RubricSampleEntry,
)
from evaluation.outputs.models import ModelOutput, System
from evaluation.results.models import JudgeAudit
from evaluation.studies.crowd.models import CrowdLink, CrowdRater, CrowdScreening, CrowdSeat
from evaluation.studies.models import Study, StudyAssignment, StudyRater, StudyRating, StudyStimulus

__all__ = [
    "Answer",
    "CrowdLink",
    "CrowdRater",
    "CrowdScreening",
    "CrowdSeat",
    "Delivery",
    "DeliverySet",
    "HumanJudgement",
    "JudgeAudit",
    "JudgeCacheEntry",
    "JudgeConfig",
    "JudgeRun",
    "Judgement",
    "ModelOutput",
    "Question",
    "Reply",
    "RubricSample",
    "RubricSampleEntry",
    "Study",
    "StudyAssignment",
    "StudyRater",
    "StudyRating",
    "StudyStimulus",
    "System",
    "Transcript",
    "VocalAttribute",
]

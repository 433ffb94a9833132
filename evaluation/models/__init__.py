"""Models of the evaluation app: systems and their outputs (judging lives beside them)."""

from evaluation.models.judging import (
    HumanJudgement,
    JudgeCacheEntry,
    JudgeConfig,
    Judgement,
    JudgeRun,
    RubricSample,
    RubricSampleEntry,
    Stage,
)
from evaluation.models.studies import Study, StudyAssignment, StudyRater, StudyRating, StudyStimulus
from evaluation.models.systems import ModelOutput, System

__all__ = [
    "HumanJudgement",
    "JudgeCacheEntry",
    "JudgeConfig",
    "JudgeRun",
    "Judgement",
    "ModelOutput",
    "RubricSample",
    "RubricSampleEntry",
    "Stage",
    "Study",
    "StudyAssignment",
    "StudyRater",
    "StudyRating",
    "StudyStimulus",
    "System",
]

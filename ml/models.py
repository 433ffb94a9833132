"""The ml app's models, for Django's registry only; they live in `ml.jobs.models` and `ml.builder.models`."""

from ml.builder.export_versions import BuildExport
from ml.builder.models import (
    Build,
    BuildDialogue,
    BuildLlmCall,
    BuildSample,
    BuildStage,
    SampleStage,
    SpotCheck,
    TaxonomyDomain,
    TaxonomySubcategory,
    TaxonomyTopic,
)
from ml.jobs.models import Checkpoint, DatasetSnapshot, OutputRewardScore

__all__ = [
    "Build",
    "BuildDialogue",
    "BuildExport",
    "BuildLlmCall",
    "BuildSample",
    "BuildStage",
    "Checkpoint",
    "DatasetSnapshot",
    "OutputRewardScore",
    "SampleStage",
    "SpotCheck",
    "TaxonomyDomain",
    "TaxonomySubcategory",
    "TaxonomyTopic",
]

"""The ml app's models, for Django's registry only; they live in `ml.jobs.models`."""

from ml.jobs.models import Checkpoint, DatasetSnapshot, OutputRewardScore

__all__ = ["Checkpoint", "DatasetSnapshot", "OutputRewardScore"]

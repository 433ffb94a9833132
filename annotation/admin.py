"""The annotation app's Django admin: each workflow registers its own models."""

from annotation.gold import admin as gold_admin  # noqa: F401  (gold references)
from annotation.labelling import admin as labelling_admin  # noqa: F401  (strategies, projects, labels, drafts)
from annotation.recording import admin as recording_admin  # noqa: F401  (items, takes, reviews)

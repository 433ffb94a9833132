"""The evaluation app's Django admin: each workflow registers its own models."""

from evaluation.echomind import admin as echomind_admin  # noqa: F401  (vocal attributes, delivery sets, questions)

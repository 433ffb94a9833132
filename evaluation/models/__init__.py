"""Models of the evaluation app: systems and their outputs (judging lives beside them)."""

from evaluation.models.systems import ModelOutput, System

__all__ = ["ModelOutput", "System"]

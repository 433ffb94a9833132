"""What a finished judge run's status says, from its counts: the one rule the page, API and client show.

A run whose job ended without trouble is

- **Failed** when it stored answers but not one of them is a valid judgement (a judge answering
  garbage, a wrong model behind the endpoint): nothing it stored can score a system;
- **Finished with errors** when more than ``ERROR_SHARE_LIMIT`` of its stored answers are judge
  errors: its means rest on a part of the outputs only, which a reader must be told;
- **Succeeded** otherwise (including a run with nothing left to judge).

A job that failed or was cancelled keeps the job's status. Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

SUCCEEDED: Final = "succeeded"
FINISHED_WITH_ERRORS: Final = "finished_with_errors"
FAILED: Final = "failed"
LABELS: Final = {SUCCEEDED: "Succeeded", FINISHED_WITH_ERRORS: "Finished with errors", FAILED: "Failed"}
# Above one answer in ten unusable, Table 2's means no longer stand for the system's outputs.
ERROR_SHARE_LIMIT: Final = 0.10


def run_outcome(counts: Mapping[str, int]) -> str:
    """Return the status of a run whose job ended well, from its valid and judge-error counts."""
    valid = int(counts.get("valid", 0))
    errors = int(counts.get("invalid_json", 0)) + int(counts.get("rubric", 0))
    if errors and not valid:
        return FAILED
    if errors / max(1, valid + errors) > ERROR_SHARE_LIMIT:
        return FINISHED_WITH_ERRORS
    return SUCCEEDED


def outcome_sentence(counts: Mapping[str, int]) -> str:
    """Return the outcome in words, with the figures it rests on."""
    valid = int(counts.get("valid", 0))
    errors = int(counts.get("invalid_json", 0)) + int(counts.get("rubric", 0))
    outcome = run_outcome(counts)
    if outcome == FAILED:
        return f"Failed: no valid judgement came back ({errors} judge errors)"
    if outcome == FINISHED_WITH_ERRORS:
        return f"Finished with errors: {errors} of {valid + errors} answers were judge errors"
    return f"Succeeded: {valid} valid judgements, {errors} judge errors"

"""A Praat TextGrid or ELAN .eaf file of a take, brought in as a machine draft for the workbench.

The file's tiers (`tier_labels`) become a `MachineDraft` of perception fields (never an annotation,
never gold): annotators opening the item start from it, as from an LLM's ToM draft, and what they
change from it is recorded. A tier the file holds that cannot be placed refuses the whole file.
"""

from __future__ import annotations

from annotation.audio.speech.tiers import TierFileError, read_tier_file
from annotation.labelling.models import TIER_FILE_DRAFT, MachineDraft
from annotation.labelling.schema import check_perception, normalise_perception, script_words
from annotation.labelling.tier_labels import draft_from_tiers
from annotation.recording.models import Item
from webapp.models import User


def import_tier_draft(item: Item, name: str, data: bytes, by: User) -> MachineDraft:
    """Store the file's tiers as a perception draft of `item`; raise TierFileError when they
    cannot be placed on its accepted take."""
    take = item.recording
    if take is None:
        raise TierFileError(f"{item.external_id} has no accepted take to place the tiers on")
    draft = draft_from_tiers(read_tier_file(name, data), take.duration_seconds)
    if not draft.perception:
        raise TierFileError("the file holds none of the tiers stressed, intonation or emotion")
    problems = check_perception(
        normalise_perception(draft.perception), words=script_words(item.text), complete=False
    )
    if problems:
        raise TierFileError("; ".join(problem.message for problem in problems))
    return MachineDraft.objects.create(
        item=item,
        model_name=f"{name} (uploaded by {by.username})",
        prompt_version=TIER_FILE_DRAFT,
        perception=draft.perception,
    )

"""Signals the outputs side sends, for the workflows above it in the pipeline to act on.

Outputs sit below judging and studies, so they cannot call them; they announce instead.
"""

from __future__ import annotations

from django.dispatch import Signal

# Sent with `outputs` (a list of ModelOutput) inside the transaction of an import that changed
# their content in place: whatever scored the old content must go with it, before the commit.
# `answered_differently` (optional) lists (system id, benchmark version, item id) of outputs the
# import created or removed: for a dialogue turn, the reply later turns were judged after changed.
outputs_changed = Signal()

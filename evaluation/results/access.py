"""Who may see results: admins only (`role_required(Role.ADMIN)` on every results view).

Results name the systems behind every score, so no evaluator may see them: an evaluator who saw
a leaderboard could recognise a system's outputs in a blind rubric sample or study afterwards.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404

from annotation.recording.models import Item


def item_for_admin(item_id: int) -> Item:
    """Return the item whose drill-down an admin asked for (with its recording); 404 when there is none."""
    return get_object_or_404(Item.objects.select_related("recording"), pk=item_id)

"""`{{ item.external_id|blind }}`: an item's id as reviewers and annotators may see it
(annotation.recording.blinding)."""

from __future__ import annotations

from django import template

from annotation.recording.blinding import blind_id

register = template.Library()


@register.filter
def blind(external_id: object) -> str:
    return blind_id(str(external_id))

"""Who may use the builder's pages (taxonomy, builds) and its Django admin: admins.

A build spends LLM and TTS budget and decides what EchoChat is trained on, as training does.
The spot-check queue (annotators) has its own rule.
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser

from webapp.models import User
from webapp.roles import Role, has_role

BUILDER_ROLES: tuple[Role, ...] = (Role.ADMIN,)


def may_build(user: User | AnonymousUser) -> bool:
    """Return True when the user may edit the taxonomy and start, re-run or export builds."""
    return has_role(user, *BUILDER_ROLES)

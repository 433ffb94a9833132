"""Who may use the spot-check queue and the build pages.

Spot-checks are annotation work: annotators, lead annotators and admins take them. Builds spend
LLM tokens and decide what EchoChat trains on: their pages, drawing a spot-check sample and
tightening a filter follow the builder's rule (``ml.builder.access.BUILDER_ROLES``: admins).
Role checks come first (``role_required``); the helpers below then fetch the object or answer 404.
"""

from __future__ import annotations

from django.http import Http404

from ml.builder.access import BUILDER_ROLES
from ml.builder.models import Build, SpotCheck
from webapp.models import User
from webapp.roles import Role

SPOT_CHECK_ROLES: tuple[Role, ...] = (Role.ANNOTATOR, Role.LEAD_ANNOTATOR, Role.ADMIN)
# The builder's own rule (admins): the build pages are the builder's pages.
BUILD_ROLES: tuple[Role, ...] = BUILDER_ROLES


def build_or_404(build_id: int) -> Build:
    """Return the build, else raise Http404."""
    build = Build.objects.filter(pk=build_id).first()
    if build is None:
        raise Http404("No such build.")
    return build


def own_spot_check_or_404(check_id: int, user: User) -> SpotCheck:
    """Return a spot-check the user took from the queue; anyone else's is 404 (not 403), so a
    check's existence and whose it is stay private."""
    check = (
        SpotCheck.objects.select_related("build", "sample", "sample__dialogue")
        .filter(pk=check_id, annotator=user)
        .first()
    )
    if check is None:
        raise Http404("No such spot-check in your queue.")
    return check

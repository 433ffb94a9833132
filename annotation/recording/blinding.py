"""What reviewers and annotators see of an item's id: an EchoMind delivery's id ends in its role
(`EM-<case>-target`, `-neutral`, `-alternative`: evaluation/echomind/deliveries.py), which would
give the answer away on a page that asks "Is this delivery neutral?". Shown blind, the role is
replaced by a short code made from the whole id: the same delivery always shows the same code, and a
case's deliveries differ from each other."""

from __future__ import annotations

import hashlib
import re

# The roles evaluation/echomind/deliveries.py ends delivery ids with (scoring.TARGET, NEUTRAL, ALTERNATIVE).
_DELIVERY_ID = re.compile(r"^(EM-.+)-(target|neutral|alternative)$")


def blind_id(external_id: str) -> str:
    """Return `external_id` with an EchoMind delivery's role replaced by a stable short code."""
    match = _DELIVERY_ID.match(external_id)
    if match is None:
        return external_id
    code = hashlib.sha256(external_id.encode()).hexdigest()[:4]
    return f"{match.group(1)}-d{code}"

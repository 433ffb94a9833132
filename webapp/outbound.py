"""The outbound-endpoint policy read from the settings, for every app (the rules: webapp.lib.outbound).

- `check_outbound_url(url)`: the one check a form, a model's clean() or an admin calls on save;
  raises `OutboundRefused` (a ValueError) saying why. `outbound_url_problem` says it instead.
- `outbound_policy()`: the policy a client carries so every call is checked again and pinned.
- `named_key(url, variable)` and `settings_key(url, key, configured_base_url)`: the only ways a
  configured API key is read for a URL; each key goes only to the host it belongs to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.conf import settings

from webapp.lib.outbound import (
    OutboundPolicy,
    OutboundRefused,
    allowed_hosts,
    api_key_from_environment,
    bound_key_problem,
    key_for_url,
)
from webapp.lib.outbound import (
    check_outbound_url as check_with_policy,
)
from webapp.models import EndpointUrlChange, User

__all__ = [
    "OutboundRefused",
    "check_outbound_url",
    "endpoint_problems",
    "named_key",
    "named_key_problem",
    "outbound_policy",
    "outbound_url_problem",
    "record_url_changes",
    "settings_key",
]


def outbound_policy() -> OutboundPolicy:
    """Return the operator's policy (ECHOSTUDIO_OUTBOUND_ALLOW_INTERNAL_HOSTS, _ALLOWED_HOSTS)."""
    return OutboundPolicy(
        allow_internal=bool(settings.OUTBOUND_ALLOW_INTERNAL_HOSTS),
        allowed_hosts=allowed_hosts(settings.OUTBOUND_ALLOWED_HOSTS),
    )


def check_outbound_url(url: str) -> None:
    """Raise OutboundRefused when a configured URL may not be saved: not http(s), carrying a
    password, or naming an internal host the policy does not allow. A name that does not resolve
    here is accepted (it may resolve from the workers); every call checks it again."""
    check_with_policy(url, outbound_policy(), unresolvable_ok=True)


def outbound_url_problem(url: str) -> str | None:
    """Return why `url` may not be saved as an endpoint, or None when it may."""
    try:
        check_outbound_url(url)
    except OutboundRefused as refused:
        return str(refused)
    return None


def named_key_problem(url: str, variable: str) -> str | None:
    """Say why the key in `variable` may not go to `url` (None: it may)."""
    return bound_key_problem(url, variable, settings.OUTBOUND_KEY_HOSTS)


def named_key(url: str, variable: str) -> str:
    """Return the key in an ECHOSTUDIO_JUDGE_KEY_* variable for `url`; raise OutboundRefused when
    the operator bound it to another host (or to none), KeyVariableRefused for another variable."""
    key = api_key_from_environment(variable)
    if (problem := named_key_problem(url, variable)) is not None:
        raise OutboundRefused(problem)
    return key


def endpoint_problems(endpoints: Iterable[tuple[str, str, str]]) -> list[str]:
    """Return what is wrong with each (what, URL, key variable) a configuration calls, in words."""
    problems = []
    for what, url, variable in endpoints:
        if (problem := outbound_url_problem(url)) is not None or (
            variable and (problem := named_key_problem(url, variable)) is not None
        ):
            problems.append(f"{what}: {problem}")
    return problems


def record_url_changes(
    changed_by: User | None, what: str, old: Mapping[str, str], new: Mapping[str, str]
) -> list[EndpointUrlChange]:
    """Record each endpoint whose URL differs between `old` and `new` ({endpoint name: URL}),
    a new one ("" before) and a removed one ("" after) included."""
    changes = [
        EndpointUrlChange(
            endpoint=f"{what}: {name}",
            old_url=old.get(name, ""),
            new_url=new.get(name, ""),
            changed_by=changed_by,
        )
        for name in sorted(set(old) | set(new))
        if old.get(name, "") != new.get(name, "")
    ]
    return EndpointUrlChange.objects.bulk_create(changes)


def settings_key(url: str, key: str, configured_base_url: str) -> str:
    """Return a key from the settings when `url` is its own configured base URL, else ""."""
    return key_for_url(url, key, configured_base_url)

"""Sessions that bring their user: one read per request for the session, the user and their roles.

Django's database sessions and its authentication middleware read the session row, then the user
by the id inside it, then (here) the user's groups: three round trips before a view does its work,
about a millisecond on PostgreSQL (issue 27). `UserSession` keeps the signed-in user's id in a
column, so the session's one read joins the user and their groups (`webapp.roles.with_group_names`).

The user read with the session is used only when Django's own `get_user` would have returned that
same user: the session names it, by a plain `ModelBackend` that is still configured, the user may
still log in (active), and the session's password hash is the user's current one. Anything else,
a stale hash, a fallback secret, another backend, goes to `django.contrib.auth.get_user`, which
decides as it always has (logging the session out, or re-keying it). Roles are read afresh on
every request, so a revoked role is gone on the next one.
"""

from __future__ import annotations

import logging
from typing import Any, cast

from django.conf import settings
from django.contrib import auth
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.auth.models import AnonymousUser
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest
from django.utils import timezone
from django.utils.crypto import constant_time_compare
from django.utils.functional import SimpleLazyObject
from django.utils.module_loading import import_string

from webapp.fixed_reads import MOMENT, TEXT, FixedRead
from webapp.models import User, UserSession
from webapp.roles import remember_roles_of, with_group_names

# The session with its user and their roles: the same shape on every request, compiled once.
SESSION_READ: FixedRead[UserSession] = FixedRead(
    lambda key, now: with_group_names(UserSession.objects.select_related("user"), "user").filter(
        session_key=key, expire_date__gt=now
    ),
    key=TEXT,
    now=MOMENT,
)


class SessionStore(DatabaseSessionStore):
    """Django's database session store over `UserSession`: the user's id saved beside the data,
    and the user with their roles read in the same query as the session (`signed_in_user`)."""

    signed_in_user: User | None = None

    @classmethod
    def get_model_class(cls) -> type[UserSession]:
        return UserSession

    def create_model_instance(self, data: dict[str, Any]) -> UserSession:
        session = cast(UserSession, super().create_model_instance(data))
        user_id = data.get(auth.SESSION_KEY)
        session.user_id = int(user_id) if isinstance(user_id, str | int) and str(user_id).isdigit() else None
        return session

    def _get_session_from_db(self) -> UserSession | None:
        try:
            rows = SESSION_READ.read(key=self.session_key, now=timezone.now())
        except SuspiciousOperation as error:  # as Django's store answers it
            logging.getLogger(f"django.security.{error.__class__.__name__}").warning(str(error))
            rows = []
        if not rows:
            self._session_key = None
            return None
        session = rows[0]
        if session.user is not None:
            remember_roles_of(session.user, rows)
        self.signed_in_user = session.user
        return session


def user_of_session(request: HttpRequest) -> User | AnonymousUser:
    """Return the request's user: the one read with the session when Django would have returned
    it too (see the module docstring), else whatever `django.contrib.auth.get_user` decides."""
    session = request.session
    try:
        user_id = User._meta.pk.to_python(session[auth.SESSION_KEY])
        backend_path = session[auth.BACKEND_SESSION_KEY]
    except KeyError:
        return AnonymousUser()
    user = getattr(session, "signed_in_user", None)  # read once the session is (loaded and so)
    if (
        user is None
        or user.pk != user_id
        or backend_path not in settings.AUTHENTICATION_BACKENDS
        or import_string(backend_path).get_user is not ModelBackend.get_user
        or not cast(ModelBackend, auth.load_backend(backend_path)).user_can_authenticate(user)
        or not constant_time_compare(session.get(auth.HASH_SESSION_KEY) or "", user.get_session_auth_hash())
    ):
        return auth.get_user(request)
    return user


class SessionUserMiddleware(AuthenticationMiddleware):
    """Django's AuthenticationMiddleware, with `request.user` from `user_of_session` (lazily, as there)."""

    def process_request(self, request: HttpRequest) -> None:
        super().process_request(request)

        def user() -> User | AnonymousUser:
            if not hasattr(request, "_cached_user"):
                request._cached_user = user_of_session(request)  # type: ignore[attr-defined]
            return request._cached_user  # type: ignore[attr-defined]

        request.user = SimpleLazyObject(user)  # type: ignore[assignment]

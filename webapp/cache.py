"""Django's Redis cache, failing open: a Redis that is down answers like an empty cache.

Everything EchoStudio keeps in the cache can be done without (the API throttles' counts, report
figures): a cache outage must not fail a request that does not need it. Under load, a 10 s Redis
restart made every API request answer 500 (issue 38), because DRF's throttles read the cache. Here a
connection error reads as a miss (`get` returns the default, `add` and `set` store nothing) and is
logged, at most once every LOG_EVERY_SECONDS per process so an outage does not flood the log. Other
Redis errors (a wrong type, a full memory) are not an outage and still raise.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeout

logger = logging.getLogger(__name__)
T = TypeVar("T")
UNREACHABLE = (RedisConnectionError, RedisTimeout)
LOG_EVERY_SECONDS = 10.0
_last_logged = 0.0


def _fail_open(what: str, work: Callable[[], T], fallback: T) -> T:
    try:
        return work()
    except UNREACHABLE as exc:
        _log_outage(what, exc)
        return fallback


def _log_outage(what: str, exc: BaseException) -> None:
    global _last_logged
    now = time.monotonic()
    if now - _last_logged >= LOG_EVERY_SECONDS:
        _last_logged = now
        logger.warning("cache unreachable (%s: %s); the request goes on without it", what, exc)


class FailOpenRedisCacheClient(RedisCacheClient):
    """Each operation of Django's client, with an unreachable server read as an empty cache."""

    def add(self, key: Any, value: Any, timeout: Any) -> bool:
        # True: an add that "won" lets a caller proceed as if it held the key, which is the open side.
        return _fail_open(
            "add", lambda: bool(super(FailOpenRedisCacheClient, self).add(key, value, timeout)), True
        )

    def get(self, key: Any, default: Any) -> Any:
        return _fail_open("get", lambda: super(FailOpenRedisCacheClient, self).get(key, default), default)

    def set(self, key: Any, value: Any, timeout: Any) -> None:
        _fail_open("set", lambda: super(FailOpenRedisCacheClient, self).set(key, value, timeout), None)

    def touch(self, key: Any, timeout: Any) -> bool:
        return _fail_open(
            "touch", lambda: bool(super(FailOpenRedisCacheClient, self).touch(key, timeout)), False
        )

    def delete(self, key: Any) -> bool:
        return _fail_open("delete", lambda: bool(super(FailOpenRedisCacheClient, self).delete(key)), False)

    def get_many(self, keys: Any) -> dict[Any, Any]:
        return _fail_open("get_many", lambda: dict(super(FailOpenRedisCacheClient, self).get_many(keys)), {})

    def has_key(self, key: Any) -> bool:
        return _fail_open("has_key", lambda: bool(super(FailOpenRedisCacheClient, self).has_key(key)), False)

    def incr(self, key: Any, delta: int) -> int:
        # No count to add to: the key reads as missing, which incr reports as ValueError, as Django's
        # backends do; callers already handle that (they set the key, which is stored nowhere).
        try:
            result: int = super().incr(key, delta)
        except UNREACHABLE as exc:
            _log_outage("incr", exc)
            raise ValueError(f"Key {key!r} not found (the cache is unreachable)") from exc
        return result

    def set_many(self, data: Any, timeout: Any) -> None:
        _fail_open("set_many", lambda: super(FailOpenRedisCacheClient, self).set_many(data, timeout), None)

    def delete_many(self, keys: Any) -> None:
        _fail_open("delete_many", lambda: super(FailOpenRedisCacheClient, self).delete_many(keys), None)

    def clear(self) -> bool:
        return _fail_open("clear", lambda: bool(super(FailOpenRedisCacheClient, self).clear()), False)


class FailOpenRedisCache(RedisCache):
    """`django.core.cache.backends.redis.RedisCache` whose client fails open (module docstring)."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = FailOpenRedisCacheClient

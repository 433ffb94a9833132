"""The judge answer cache in the database (JudgeCacheEntry), safe to use from the client's threads."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from evaluation.judging.models import JudgeCacheEntry
from webapp.db import ThreadOrm


class DatabaseJudgeCache:
    """A JudgeCache over JudgeCacheEntry that touches the database only on the thread that made it.

    `JudgeClient.judge_stream` consults the cache from its pool threads; Django would open a
    connection per thread and nothing would close them. So pool threads only read and write
    memory: `prefetch` loads a chunk's answers beforehand and `flush` stores new answers, both on
    the owner thread (judge_stream calls its result callback there): `webapp.db.ThreadOrm`'s rule.
    """

    def __init__(self) -> None:
        self._orm = ThreadOrm()
        self._lock = threading.Lock()
        self._known: dict[str, str] = {}
        self._pending: dict[str, str] = {}

    def get(self, key: str) -> str | None:
        with self._lock:
            if key in self._known:
                return self._known[key]
        if not self._orm.on_owner_thread():
            return None
        text = JudgeCacheEntry.objects.filter(key=key).values_list("text", flat=True).first()
        if text is not None:
            with self._lock:
                self._known[key] = text
        return text

    def set(self, key: str, value: str) -> None:
        with self._lock:
            self._known[key] = value
            self._pending[key] = value
        if self._orm.on_owner_thread():
            self.flush()

    def prefetch(self, keys: Iterable[str]) -> None:
        """Load the stored answers of these prompts into memory (owner thread only)."""
        rows = JudgeCacheEntry.objects.filter(key__in=list(keys)).values_list("key", "text")
        with self._lock:
            self._known.update(rows)

    def flush(self) -> None:
        """Store answers received since the last flush (owner thread only)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if pending:
            JudgeCacheEntry.objects.bulk_create(
                [JudgeCacheEntry(key=key, text=text) for key, text in pending.items()], ignore_conflicts=True
            )

    def forget(self, key: str) -> None:
        """Drop an answer (one that broke the rubric) so that judging it again asks the judge again."""
        with self._lock:
            self._known.pop(key, None)
            self._pending.pop(key, None)
        JudgeCacheEntry.objects.filter(key=key).delete()

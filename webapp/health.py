"""Reachability checks for the services EchoStudio depends on."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection
from kombu import Connection


def check_database() -> dict[str, Any]:
    """Return {"ok": True} when a trivial query succeeds, else the error."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any driver error means "unreachable" to the caller
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    return {"ok": True, "vendor": connection.vendor}


def check_broker(timeout_s: int = 2) -> dict[str, Any]:
    """Return {"ok": True} when the Celery broker accepts a connection, else the error."""
    broker_url = str(settings.CELERY_BROKER_URL)
    transport = broker_url.split("://", 1)[0]
    try:
        if transport == "filesystem":
            folder = Path(str(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]))
            if not (folder.is_dir() and os.access(folder, os.W_OK)):
                raise OSError(f"broker folder {folder} is missing or not writable")
        else:
            # A fresh connection, not the app's pool: the check must reflect the broker right now.
            with Connection(broker_url, connect_timeout=timeout_s) as conn:
                conn.ensure_connection(max_retries=1, timeout=timeout_s, interval_start=0)
    except Exception as exc:  # any transport error means "unreachable" to the caller
        return {"ok": False, "transport": transport, "error": f"{type(exc).__name__}: {exc}"[:300]}
    return {"ok": True, "transport": transport}

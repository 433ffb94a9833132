"""Production gunicorn settings, read by `gunicorn webapp.wsgi` run from the checkout.

Override any of them on the command line or with GUNICORN_CMD_ARGS.
"""

from __future__ import annotations

import os

bind = os.environ.get("ECHOSTUDIO_BIND", "127.0.0.1:8000")
# Threads, not more processes: a worker's memory is mostly the app, and views wait on PostgreSQL.
worker_class = "gthread"
workers = int(os.environ.get("ECHOSTUDIO_WEB_WORKERS", "2"))
threads = int(os.environ.get("ECHOSTUDIO_WEB_THREADS", "8"))
# Longer than any client or proxy keeps an idle connection (nginx's upstream keepalive_timeout is
# 60 s): with gunicorn's default of 2 s, a client reusing a connection just as gunicorn closes it
# gets a reset mid-request.
keepalive = 75
# Uploads and exports are streamed by views; a request that takes longer is stuck, not slow.
timeout = 120
graceful_timeout = 30
# Recycle workers now and then, so a slow leak in a library never grows without bound.
max_requests = 5000
max_requests_jitter = 500
# A proxy in front usually keeps the access log; set ECHOSTUDIO_ACCESS_LOG (a path, or - for stderr) to keep one here.
accesslog = os.environ.get("ECHOSTUDIO_ACCESS_LOG") or None
forwarded_allow_ips = os.environ.get("ECHOSTUDIO_FORWARDED_ALLOW_IPS", "127.0.0.1")

"""The app with its static files served by Django (as nginx serves them in production), for benches
that open pages in a real browser under gunicorn (bench/long_audio.py)."""

from __future__ import annotations

import os

from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
application = StaticFilesHandler(get_wsgi_application())

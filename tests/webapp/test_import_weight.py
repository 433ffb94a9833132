"""Loading the web app imports no heavy library: they load where used (tasks, exports, analysis).

A web worker that imported torch, pyarrow/pandas/datasets, scipy or parselmouth at start-up
carried ~250 MB before its first request (issue 14). Run in a fresh interpreter, since this test
process has long imported everything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = (
    "torch",
    "pyarrow",
    "pandas",
    "datasets",
    "scipy",
    "parselmouth",
    "transformers",
    # the speech models of annotation.audio.speech (issue 26) load in the jobs that use them (and
    # pyloudnorm where a study levels its clips as they are frozen), never at start-up
    "onnxruntime",
    "pocketsphinx",
    "speechmos",
    "resemblyzer",
    "librosa",
    "pyloudnorm",
    # the Redis client (61 modules, ~6 MiB) loads where a cache or broker call needs it; the
    # transient-error check looks its errors up only once it is loaded (webapp.db)
    "redis",
    # the HTTP client (with rich, click and pygments, 81 modules) loads with the first outbound
    # client (webapp.lib.pinned_http), in a job or the drafting view; the policy that checks a
    # URL on save is webapp.lib.outbound, without it
    "httpx",
    "rich",
)

LOAD_THE_WEB_APP = """
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
import django
django.setup()
import webapp.urls, webapp.wsgi
from django.urls import get_resolver
get_resolver().url_patterns  # resolve every app's urls and views, as the first request does
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] in {heavy})))
"""


def test_loading_the_web_app_imports_no_heavy_library() -> None:
    script = LOAD_THE_WEB_APP.format(heavy=repr(set(HEAVY)))
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == [], f"the web app imported {', '.join(sorted({n.split('.')[0] for n in loaded}))}"

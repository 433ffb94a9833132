"""Label Studio's side of bench/labelstudio.py: installed from PyPI into a scratch virtualenv, run
offline on its own PostgreSQL database under gunicorn with EchoStudio's gunicorn.conf.py, and the
requests that stand beside EchoStudio's nine.

The virtualenv lives in ~/.cache/echostudio-bench/ls-venv and is made once (python3.11 -m venv, then
pip install label-studio==VERSION and the gunicorn EchoStudio runs); a later run finds it and checks
its versions. Label Studio's telemetry, Sentry reporting and update check are switched off.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from bench.servers import ROOT

VERSION = "1.23.2"
CACHE = Path.home() / ".cache" / "echostudio-bench"
VENV = CACHE / "ls-venv"
PYTHON = VENV / "bin" / "python"
SEED = ROOT / "bench" / "labelstudio_seed.py"
CSRF_SECRET = "b" * 32
IMPORT_CHUNK = 10_000  # tasks per import request: Label Studio reads the whole JSON body at once


def ensure_installed() -> float:
    """Make the virtualenv unless it holds Label Studio VERSION; return the seconds it took."""
    wanted = f"{VERSION} {metadata.version('gunicorn')}"
    if PYTHON.exists() and installed_versions() == wanted:
        return 0.0
    started = time.perf_counter()
    shutil.rmtree(VENV, ignore_errors=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    interpreter = shutil.which("python3.11") or sys.executable  # Label Studio 1.23 supports 3.10-3.13
    subprocess.run([interpreter, "-m", "venv", str(VENV)], check=True)
    packages = [f"label-studio=={VERSION}", f"gunicorn=={metadata.version('gunicorn')}"]
    subprocess.run([str(PYTHON), "-m", "pip", "install", "-q", *packages], check=True)
    if installed_versions() != wanted:
        raise SystemExit(f"the virtualenv holds {installed_versions()}, not {wanted}")
    return time.perf_counter() - started


def installed_versions() -> str:
    code = "from importlib import metadata as m; print(m.version('label-studio'), m.version('gunicorn'))"
    found = subprocess.run([str(PYTHON), "-c", code], capture_output=True, text=True)
    return found.stdout.strip()


def package_dir() -> Path:
    code = "import label_studio, os; print(os.path.dirname(label_studio.__file__))"
    return Path(
        subprocess.run([str(PYTHON), "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    )


def environment(database_url: str) -> dict[str, str]:
    """Return Label Studio's environment: its database, its data directory, nothing sent out."""
    url = urlsplit(database_url)
    database = url.path.lstrip("/")
    inherited = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    return {
        **inherited,
        "DJANGO_SETTINGS_MODULE": "core.settings.label_studio",
        "DJANGO_DB": "postgresql",
        "POSTGRE_NAME": database,
        "POSTGRE_USER": url.username or "postgres",
        "POSTGRE_PASSWORD": url.password or "",
        "POSTGRE_HOST": url.hostname or "127.0.0.1",
        "POSTGRE_PORT": str(url.port or 5432),
        "BASE_DATA_DIR": str(CACHE / f"ls-data-{database}"),
        # Label Studio draws a new key in every process that lacks one; its sessions are signed
        # cookies, so the seeding process and the server must share this run's key.
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DEBUG": "false",
        "LOG_LEVEL": "WARNING",
        # Offline: no analytics, no Sentry (its DSNs default to HumanSignal's), no PyPI version check.
        "COLLECT_ANALYTICS": "false",
        "SENTRY_DSN": "",
        "FRONTEND_SENTRY_DSN": "",
        "LATEST_VERSION_CHECK": "false",
        "FEATURE_FLAGS_OFFLINE": "true",
    }


def migrate(env: dict[str, str]) -> None:
    manage = package_dir() / "manage.py"
    subprocess.run([str(PYTHON), str(manage), "migrate", "--noinput", "-v", "0"], env=env, check=True)


def seed(env: dict[str, str], *arguments: object) -> dict[str, Any]:
    """Run a command of bench/labelstudio_seed.py under Label Studio; return the JSON it printed."""
    done = subprocess.run(
        [str(PYTHON), str(SEED), *map(str, arguments)], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"labelstudio_seed.py {arguments} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def http_client(base: str, cookie_name: str, session: str) -> httpx.Client:
    """A client with a Label Studio session, a fresh connection for every request (as EchoStudio's)."""
    return httpx.Client(
        base_url=base,
        timeout=600,
        cookies={cookie_name: session, "csrftoken": CSRF_SECRET},
        headers={"X-CSRFToken": CSRF_SECRET, "Referer": base + "/"},
        limits=httpx.Limits(max_keepalive_connections=0),
    )


def task(n: int, script: str) -> dict[str, str]:
    """Return the task of item `n`: the same fields EchoStudio's import file has."""
    emotions = ("happy", "sad", "angry", "surprise", "disgust", "fear", "neutral")
    return {
        "external_id": f"EE-{n:07d}",
        "text": f"Utterance {n}: {script}",
        "scenario": "modality-conflict",
        "target_emotion": emotions[n % 7],
        "split": ("test", "dev", "train")[n % 3],
    }


def import_tasks(http: httpx.Client, project: int, first: int, count: int, script: str) -> float:
    """Import tasks through Label Studio's import API; return the seconds the requests took."""
    body = [task(n, script) for n in range(first, first + count)]
    started = time.perf_counter()
    response = http.post(f"/api/projects/{project}/import", json=body)
    seconds = time.perf_counter() - started
    if response.status_code != 201 or response.json().get("task_count") != count:
        raise SystemExit(f"Label Studio's import answered {response.status_code}: {response.text[:300]}")
    return seconds


def send(http: httpx.Client, method: str, url: str, expected: int, body: object = None) -> httpx.Response:
    response = http.request(method, url, json=body)
    if response.status_code != expected:
        raise SystemExit(
            f"Label Studio: {method} {url} answered {response.status_code}: {response.text[:300]}"
        )
    return response


@dataclass(frozen=True)
class Seeded:
    project: int
    annotation: int  # one of the annotator's annotations
    labelled_task: int
    open_tasks: list[int]  # tasks nobody annotated yet, for submits
    result: list[dict[str, Any]]  # an annotation's result as the editor sends it


def cases(clients: dict[str, httpx.Client], seeded: Seeded) -> dict[str, Callable[[], object]]:
    """Return, for each of EchoStudio's nine requests, the Label Studio request(s) that do its work."""
    annotator, admin, project = clients["annotator"], clients["admin"], seeded.project
    task_list = f"/api/tasks/?project={project}&page=1&page_size=30"
    draft = send(
        annotator,
        "POST",
        f"/api/tasks/{seeded.open_tasks[0]}/drafts",
        201,
        {"result": seeded.result, "lead_time": 1},
    ).json()["id"]
    open_tasks = list(seeded.open_tasks[1:])
    lead = {"time": 1.0}

    def queue_page() -> None:
        # The data manager: its page shell, then the first page of tasks its JavaScript asks for.
        send(annotator, "GET", f"/projects/{project}/data/", 200)
        send(annotator, "GET", task_list, 200)

    def autosave() -> None:
        lead["time"] += 1.0
        send(
            annotator,
            "PATCH",
            f"/api/drafts/{draft}/",
            200,
            {"result": seeded.result, "lead_time": lead["time"]},
        )

    def submit() -> None:
        body = {"result": seeded.result, "lead_time": 12.5}
        send(annotator, "POST", f"/api/tasks/{open_tasks.pop()}/annotations/", 201, body)

    return {
        "queue page": queue_page,
        "workbench": lambda: send(annotator, "GET", f"/api/projects/{project}/next/", 200),
        "autosave": autosave,
        "submit (form)": submit,
        "submit (REST)": submit,
        "my annotations API, 30": lambda: send(annotator, "GET", task_list, 200),
        "one annotation API": lambda: send(annotator, "GET", f"/api/annotations/{seeded.annotation}/", 200),
        "items list API, 30": lambda: send(admin, "GET", task_list, 200),
        "one item API": lambda: send(admin, "GET", f"/api/tasks/{seeded.labelled_task}/", 200),
    }

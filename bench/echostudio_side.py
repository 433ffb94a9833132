"""EchoStudio's side of the server benches (bench/scale.py, bench/labelstudio.py): its people and data,
the nine annotator-facing requests, and each request timed over HTTP on a fresh connection.

Django must be set up (on the bench database) before this is imported.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from django.conf import settings
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.gold.models import GoldReference
from annotation.labelling import workflows
from annotation.labelling.models import Annotation
from bench import servers
from bench.request_profile import (
    ANNOTATORS,
    PERCEPTION_FORM,
    PERCEPTION_JSON,
    SCRIPT,
    TOM_FORM,
    TOM_JSON,
    label_first_items,
)
from webapp.models import User
from webapp.roles import Role, grant_role

EMOTIONS = ("happy", "sad", "angry", "surprise", "disgust", "fear", "neutral")
IMPORT_CHUNK = 100_000  # rows per upload: about 10 MB, under the page's limit for an import in the request
CSRF_SECRET = "b" * 32  # a CSRF secret of the right shape; the header repeats the cookie, as a page's JS does
# The bench sends far more than an annotator would; the API's per-user throttle must not answer 429.
SERVER_ENV = {"DJANGO_DEBUG": "0", "ECHOSTUDIO_API_USER_RATE": "1000000/min"}


@dataclass(frozen=True)
class Call:
    """One HTTP request: a form or a JSON body, and the status that means it worked."""

    method: str
    url: str
    expected: int = 200
    form: dict[str, str] | None = None
    json: dict[str, Any] | None = None


@dataclass
class Case:
    """A measured request: `next_call` gives the request to send next (a submit needs a new annotation)."""

    name: str
    who: str  # "annotator" or "admin"
    next_call: Callable[[], Call]
    label_studio: str = ""  # the Label Studio request it is compared with, in words


@dataclass(frozen=True)
class People:
    admin: User
    annotators: list[User]
    actor: User


def make_people() -> People:
    admin = User.objects.create_user(username="bench-admin")
    grant_role(admin, Role.ADMIN)
    annotators = [User.objects.create_user(username=f"bench-annotator-{n}") for n in range(ANNOTATORS)]
    for user in annotators:
        grant_role(user, Role.ANNOTATOR)
    actor = User.objects.create_user(username="bench-actor")
    grant_role(actor, Role.VOICE_ACTOR)
    return People(admin, annotators, actor)


def label_items(people: People) -> None:
    """Accepted takes on the first 10,000 items, 3 annotations each (30,000), gold on every 20th."""
    label_first_items(people.annotators, people.actor)


def item_file(first: int, count: int) -> bytes:
    lines = ["external_id,text,scenario,target_emotion,split"]
    for n in range(first, first + count):
        split = ("test", "dev", "train")[n % 3]
        lines.append(f'EE-{n:07d},"Utterance {n}: {SCRIPT}",modality-conflict,{EMOTIONS[n % 7]},{split}')
    return ("\n".join(lines) + "\n").encode()


def server_env(database_url: str) -> dict[str, str]:
    # The sessions made in this process must be valid in the server's.
    return {
        **os.environ,
        **SERVER_ENV,
        "DATABASE_URL": database_url,
        "DJANGO_SECRET_KEY": settings.SECRET_KEY,
    }


def http_client(base: str, user: User) -> httpx.Client:
    """Return a client signed in as `user` (a session made in-process) that opens a fresh connection
    for every request, as a browser's first request does: no keep-alive to flatter either server."""
    django_client = Client()
    django_client.force_login(user)
    cookies = {"sessionid": django_client.cookies["sessionid"].value, "csrftoken": CSRF_SECRET}
    return httpx.Client(
        base_url=base,
        timeout=600,
        cookies=cookies,
        headers={"X-CSRFToken": CSRF_SECRET, "Referer": base + "/"},
        limits=httpx.Limits(max_keepalive_connections=0),
    )


def import_items(http: httpx.Client, first: int, count: int, chunk: int = IMPORT_CHUNK) -> float:
    """Import `count` items through the import page in uploads of `chunk` rows; return the seconds it took."""
    seconds = 0.0
    for start in range(first, first + count, chunk):
        rows = min(chunk, first + count - start)
        data = item_file(start, rows)
        started = time.perf_counter()
        response = http.post("/manage/items/import/", files={"file": ("items.csv", data, "text/csv")})
        seconds += time.perf_counter() - started
        if f'data-testid="created">{rows}<'.encode() not in response.content:
            raise SystemExit(f"the import of {rows} rows did not go through ({response.status_code})")
    return seconds


def send(http: httpx.Client, call: Call) -> httpx.Response:
    response = http.request(call.method, call.url, data=call.form, json=call.json)
    if response.status_code != call.expected:
        raise SystemExit(f"{call.method} {call.url} answered {response.status_code}: {response.text[:300]}")
    return response


def sender(http: dict[str, httpx.Client], case: Case) -> Callable[[], httpx.Response]:
    """Return a function that sends the case's next request with its sender's client."""
    return lambda: send(http[case.who], case.next_call())


def send_in_process(client: Client, call: Call) -> list[tuple[str, float]]:
    """Send the request through Django's test client here; return its SQL queries and their seconds."""
    with CaptureQueriesContext(connection) as captured:
        if call.json is not None:
            response = client.generic(
                call.method, call.url, data=json.dumps(call.json), content_type="application/json"
            )
        elif call.method == "POST":
            response = client.post(call.url, data=call.form or {})
        else:
            response = client.get(call.url)
    if response.status_code != call.expected:
        raise SystemExit(f"{call.method} {call.url} answered {response.status_code} in-process")
    return [(query["sql"], float(query["time"])) for query in captured.captured_queries]


def cases(people: People, per_case: int) -> list[Case]:
    """The nine annotator-facing requests, with enough opened annotations for `per_case` submits each."""
    annotator = people.annotators[0]
    open_ids = list(Annotation.objects.open_queue_of(annotator).values_list("pk", flat=True))
    if len(open_ids) < 2 * per_case + 2:
        raise SystemExit(f"annotator 0 has {len(open_ids)} open annotations, {2 * per_case + 2} needed")
    draft = workflows.open_annotation(Annotation.objects.get(pk=open_ids.pop()))
    form_submits = [
        workflows.open_annotation(a) for a in Annotation.objects.filter(pk__in=open_ids[:per_case])
    ]
    rest_submits = [
        workflows.open_annotation(a)
        for a in Annotation.objects.filter(pk__in=open_ids[per_case : 2 * per_case])
    ]
    gold = GoldReference.objects.filter(is_current=True).select_related("item").first()
    assert gold is not None
    version = {"draft": draft.version}

    def autosave() -> Call:
        form = {
            **PERCEPTION_FORM,
            "p_situation": f"draft {time.perf_counter()}",
            "version": str(version["draft"]),
        }
        version["draft"] += 1  # each autosave that works moves the draft on one version
        return Call("POST", f"/annotate/{draft.pk}/autosave/", form=form)

    def submit_form() -> Call:
        annotation = form_submits.pop()
        form = {**PERCEPTION_FORM, **TOM_FORM, "version": str(annotation.version)}
        return Call("POST", f"/annotate/{annotation.pk}/submit/", expected=302, form=form)

    def submit_rest() -> Call:
        annotation = rest_submits.pop()
        body = {"version": annotation.version, "perception": PERCEPTION_JSON, "tom": TOM_JSON}
        return Call("POST", f"/api/annotations/{annotation.pk}/submit/", json=body)

    def get(url: str) -> Callable[[], Call]:
        return lambda: Call("GET", url)

    return [
        Case(
            "queue page", "annotator", get("/annotate/?show=open"), "data manager page + its task list call"
        ),
        Case("workbench", "annotator", get(f"/annotate/{draft.pk}/"), "next task (labeling stream)"),
        Case("autosave", "annotator", autosave, "draft update (PATCH /api/drafts/<id>/)"),
        Case("submit (form)", "annotator", submit_form, "annotation POST"),
        Case("submit (REST)", "annotator", submit_rest, "annotation POST"),
        Case("my annotations API, 30", "annotator", get("/api/annotations/?page_size=30"), "task list, 30"),
        Case("one annotation API", "annotator", get(f"/api/annotations/{draft.pk}/"), "one annotation"),
        Case("items list API, 30", "admin", get("/api/items/?page_size=30"), "task list, 30"),
        Case("one item API", "admin", get(f"/api/items/{gold.item.external_id}/"), "one task"),
    ]


def queries_of(people: People, measured: list[Case]) -> dict[str, list[tuple[str, float]]]:
    """Return each case's SQL queries (and seconds) for one request sent in-process (the same code path)."""
    clients = {"annotator": Client(), "admin": Client()}
    clients["annotator"].force_login(people.annotators[0])
    clients["admin"].force_login(people.admin)
    return {case.name: send_in_process(clients[case.who], case.next_call()) for case in measured}


class Served:
    """The running server's processes: gunicorn's workers and their PostgreSQL backends."""

    def __init__(self, master: int, server_url: str, database: str) -> None:
        self.master, self.server_url, self.database = master, server_url, database

    def pids(self) -> list[int]:
        return servers.worker_pids(self.master) + servers.backend_pids(self.server_url, self.database)

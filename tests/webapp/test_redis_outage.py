"""The cache and the broker stop under a running API client (a Redis restart): pages and the API go
on answering, the client's writes land once, and a job started meanwhile reaches the broker once it
is back. The Redis stopped is the test's own, on a port of its own; never the shared one."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from evaluation.judging.models import JudgeConfig, JudgeRun
from evaluation.outputs.models import System
from tests.conftest import skip_or_fail
from webapp.api.tokens import create_token
from webapp.celery import app
from webapp.client.session import Studio
from webapp.jobs import resend_unsent_jobs
from webapp.models import Job, JobStatus, User

pytestmark = pytest.mark.services
REDIS_SERVER = "/usr/bin/redis-server"


class ThrowawayRedis:
    """A redis-server of the test's own, stopped and started again on the same port."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--dir",
                str(self.folder),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("the throwaway redis-server never listened")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[ThrowawayRedis]:
    if not Path(REDIS_SERVER).exists():
        skip_or_fail("redis-server is not installed")
    server = ThrowawayRedis(tmp_path)
    server.start()
    yield server
    server.stop()


def _reset_broker_connections() -> None:
    # The app keeps one pool of broker connections (and producers) per process, made on first use.
    # (private attributes: Celery offers no public way to move a running app to another broker)
    setattr(app, "_pool", None)  # noqa: B010
    setattr(app.amqp, "_producer_pool", None)  # noqa: B010


@contextmanager
def broker_at(url: str) -> Iterator[None]:
    saved = app.conf.broker_url, app.conf.broker_transport_options
    # Celery reads CELERY_BROKER_URL from the environment before its own settings.
    environment = os.environ.pop("CELERY_BROKER_URL", None)
    app.conf.update(broker_url=url, broker_transport_options={})
    _reset_broker_connections()
    try:
        yield
    finally:
        if environment is not None:
            os.environ["CELERY_BROKER_URL"] = environment
        app.conf.update(broker_url=saved[0], broker_transport_options=saved[1])
        _reset_broker_connections()


def test_pages_and_the_api_answer_while_the_cache_and_the_broker_are_down(
    live_server: Any, users: dict[str, User], redis_server: ThrowawayRedis, settings
) -> None:
    settings.CACHES = {
        "default": {
            "BACKEND": "webapp.cache.FailOpenRedisCache",
            "LOCATION": f"{redis_server.url}/0",
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }
    system = System.objects.create(name="Omni-X")
    judge = JudgeConfig.objects.create(name="offline", offline_heuristic=True)
    studio = Studio(live_server.url, create_token(users["admin"], "cli").secret, quiet=True)
    pages = Client(raise_request_exception=False)
    pages.force_login(users["admin"])
    with broker_at(f"{redis_server.url}/1"):
        assert studio.json("GET", "systems/")["results"]

        # when Redis stops, taking the cache and the broker with it
        redis_server.stop()

        # then pages and the API answer, and each write lands once
        for path in ("/manage/", "/manage/judge-runs/", "/api/systems/"):
            answer = pages.get(path)
            assert answer.status_code == 200, (path, answer.status_code)
        made = studio.json("POST", "systems/", json={"name": "During the outage"})
        started = studio.request("POST", "judge-runs/", json={"system": system.pk, "judge": judge.pk})
        assert started.status_code == 201
        assert System.objects.filter(name="During the outage").count() == 1 and made["name"]
        job = JudgeRun.objects.get(system=system).job
        assert job is not None and (job.status, job.enqueued_at) == (JobStatus.QUEUED, None)

        # and once Redis is back, the job the broker missed is sent, once
        redis_server.start()
        Job.objects.filter(pk=job.pk).update(created_at=job.created_at - timedelta(minutes=1))
        assert resend_unsent_jobs() == [job.pk]
        job.refresh_from_db()
        assert job.sends == 1 and job.enqueued_at is not None
        assert resend_unsent_jobs() == []
    # Ends the kept-alive connection, so the live server's request thread ends with its database
    # connection (else PostgreSQL cannot drop the test database).
    studio.http.close()

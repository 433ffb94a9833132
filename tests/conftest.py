"""Shared fixtures: named users per role, logged-in clients, a real Celery worker, real Chromium."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from django.db import connection
from django.test import Client

from tests.support.s3_server import s3_server  # noqa: F401  (a fixture every test folder may use)

if TYPE_CHECKING:
    from webapp.models import User

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")


def services_required() -> bool:
    """CI sets ECHOSTUDIO_REQUIRE_SERVICES=1 so a missing service fails instead of skipping."""
    return os.environ.get("ECHOSTUDIO_REQUIRE_SERVICES", "") not in ("", "0", "false")


def skip_or_fail(reason: str, *, service_missing: bool = True) -> None:
    """Skip a test whose service is unavailable, or fail it when services are required.

    Every skip in the suite goes through here (tests/test_test_hygiene.py checks). A skip that is
    about the run's choice rather than a missing service (`service_missing=False`: a test of
    PostgreSQL's row locks on the SQLite pass, which CI's PostgreSQL pass runs) stays a skip."""
    if service_missing and services_required():
        pytest.fail(f"required service unavailable: {reason}")
    pytest.skip(reason)


def only_on_postgresql(reason: str) -> None:
    """Skip a test of PostgreSQL's own behaviour (row locks, killed backends) on another database."""
    if connection.vendor != "postgresql":
        skip_or_fail(reason, service_missing=False)


# The fake judge, LLM, TTS and audio servers tests start listen on 127.0.0.1: the outbound policy
# (webapp.lib.outbound) lets tests call that one internal host, and nothing else internal.
TEST_SERVER_HOSTS = ["127.0.0.1"]


@pytest.fixture(autouse=True)
def _local_test_servers(settings: Any) -> None:
    settings.OUTBOUND_ALLOW_INTERNAL_HOSTS = False
    settings.OUTBOUND_ALLOWED_HOSTS = TEST_SERVER_HOSTS


@pytest.fixture(scope="session")
def _throttle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("throttles")


@pytest.fixture(autouse=True)
def _fresh_throttles(_throttle_dir: Path) -> Iterator[None]:
    """Every test's client is 127.0.0.1 and ids repeat between tests: no test inherits the
    API throttles' counts (in the cache, or in files of this run's own) of another."""
    from django.conf import settings

    from webapp.api.throttles import forget_all_counts

    settings.THROTTLE_DIR = _throttle_dir
    forget_all_counts()
    yield


@pytest.fixture
def strict_outbound(settings: Any) -> None:
    """The production default: no internal host may be called, not even the tests' own servers."""
    settings.OUTBOUND_ALLOW_INTERNAL_HOSTS = False
    settings.OUTBOUND_ALLOWED_HOSTS = []


@pytest.fixture
def media_root(settings: Any, tmp_path: Path) -> Path:
    """Store media on the local disk under the test's own folder, so what a test leaves can be checked."""
    folder = tmp_path / "media"
    folder.mkdir(exist_ok=True)
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(folder)},
        },
    }
    return folder


@pytest.fixture
def make_user(db: None) -> Callable[..., User]:
    """Return a maker of users holding one role (or none), named after it unless a name is given."""
    from tests.factories import UserFactory
    from webapp.roles import Role

    counter = iter(range(1, 10_000))

    def make(role: Role | None = None, username: str | None = None, **extra: object) -> User:
        name = username or f"{role.value if role else 'norole'}{next(counter)}"
        user: User = UserFactory.create(username=name, role=role, **extra)
        return user

    return make


@pytest.fixture
def users(make_user: Callable[..., User]) -> dict[str, User]:
    """One user per role, plus one without any role."""
    from webapp.roles import Role

    return {
        "actor": make_user(Role.VOICE_ACTOR, "actor"),
        "reviewer": make_user(Role.REVIEWER, "reviewer"),
        "annotator": make_user(Role.ANNOTATOR, "annotator"),
        "lead": make_user(Role.LEAD_ANNOTATOR, "lead"),
        "evaluator": make_user(Role.EVALUATOR, "evaluator"),
        "admin": make_user(Role.ADMIN, "admin"),
        "norole": make_user(None, "norole"),
    }


@pytest.fixture
def client_for(users: dict[str, User]) -> Callable[[str], Client]:
    """Return a client logged in as the named user of the `users` fixture."""

    def login(name: str) -> Client:
        client = Client()
        client.force_login(users[name])
        return client

    return login


def _worker_environment(extra: dict[str, str]) -> dict[str, str]:
    settings_dict = connection.settings_dict
    env = dict(os.environ)
    env["ECHOSTUDIO_OUTBOUND_ALLOWED_HOSTS"] = ",".join(TEST_SERVER_HOSTS)
    if connection.vendor == "sqlite":
        env["DATABASE_URL"] = f"sqlite:///{settings_dict['NAME']}"
    else:
        auth = settings_dict["USER"] + (f":{settings_dict['PASSWORD']}" if settings_dict["PASSWORD"] else "")
        env["DATABASE_URL"] = (
            f"postgres://{auth}@{settings_dict['HOST'] or 'localhost'}:{settings_dict['PORT'] or 5432}"
            f"/{settings_dict['NAME']}"
        )
    env.update(extra)
    # The worker consumes the test's own broker, whatever else a test moves (ECHOSTUDIO_VAR_DIR also
    # moves the file broker's folder): set after `extra` so no test can part them by accident.
    from django.conf import settings

    env["CELERY_BROKER_URL"] = str(settings.CELERY_BROKER_URL)
    env["ECHOSTUDIO_BROKER_DIR"] = str(settings.BROKER_DIR)
    return env


def no_other_connection_holds_a_database_lock() -> bool:
    """True when no other connection to the test database is inside a transaction holding locks."""
    if connection.vendor == "sqlite":
        import sqlite3

        # EXCLUSIVE, not IMMEDIATE: in rollback-journal mode a stopped reader's SHARED lock blocks
        # every commit, and only an exclusive lock finds it.
        probe = sqlite3.connect(connection.settings_dict["NAME"], timeout=0.2, isolation_level=None)
        try:
            probe.execute("BEGIN EXCLUSIVE")
            probe.execute("ROLLBACK")
            return True
        except sqlite3.OperationalError:
            return False
        finally:
            probe.close()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%%'"
        )
        return cursor.fetchone()[0] == 0


class WorkerProcess:
    """A real `celery worker` process consuming `queues` (default and gpu), started and killed by tests."""

    def __init__(self, env: dict[str, str], log_path: Path, queues: str = "default,gpu") -> None:
        self.env = env
        self.log_path = log_path
        self.queues = queues
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "webapp",
                "worker",
                "-Q",
                self.queues,
                "--concurrency",
                "1",
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill(self) -> None:
        """SIGKILL the worker and its pool children at once, as a crash or OOM kill would."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def pause(self) -> None:
        """SIGSTOP the worker and its pool: a stall (swapping, a hung driver) with the process alive.

        The stop lands between two of the worker's transactions: a worker stopped inside one
        would hold SQLite's file lock (or a PostgreSQL row lock) for as long as it sleeps, and
        every other process would fail on "database is locked" instead of taking the job over,
        which is not the stall these tests are about. So stop, look, and if it holds a lock,
        let it run a moment and stop it again."""
        if not self.process or self.process.poll() is not None:
            return
        for _ in range(100):
            os.killpg(self.process.pid, signal.SIGSTOP)
            if no_other_connection_holds_a_database_lock():
                return
            os.killpg(self.process.pid, signal.SIGCONT)
            wait_until(no_other_connection_holds_a_database_lock, 30, "a transaction never ended")
        raise AssertionError("the worker never paused outside a transaction")

    def resume(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGCONT)

    def owns_pid(self, pid: int) -> bool:
        """Return True when `pid` (a job's worker) is this worker or one of its pool processes."""
        try:
            return self.process is not None and os.getpgid(pid) == self.process.pid
        except ProcessLookupError:
            return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGCONT)
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")[-5000:]


def _purge_stale_messages(queues: Iterable[str]) -> set[str]:
    """Drop the messages earlier tests or test runs left on these queues; return the queues.

    The broker outlives the test database (var/broker/ or a Redis database), and job ids start
    again at 1 in each new test database: a message left for an old job 5 would run this test's
    job 5 on whichever worker takes it, such as a builder audio stage on a worker not meant to.
    """
    from kombu import Queue

    from webapp.celery import app

    names = set(queues)
    with app.connection_for_write() as broker:
        for name in names:
            Queue(name).bind(broker.default_channel).purge()
    return names


@pytest.fixture
def worker_factory(transactional_db: None, tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    """Start real worker processes against the test database and the configured broker."""
    from django.conf import settings

    from webapp.celery import app
    from webapp.health import check_broker

    if not check_broker()["ok"]:
        skip_or_fail(f"Celery broker {app.conf.broker_url} is not reachable")
    if connection.vendor == "sqlite" and ":memory:" in str(connection.settings_dict["NAME"]):
        skip_or_fail("a worker process cannot share an in-memory SQLite database")
    started: list[WorkerProcess] = []
    purged = _purge_stale_messages(settings.JOB_QUEUES)

    def start(queues: str = "default,gpu", **extra_env: str) -> WorkerProcess:
        from webapp.models import Job, JobStatus

        # A queue only the worker's environment names (a builder pool) is cleared the first time a
        # worker is started on it, unless this test already has a job waiting there.
        fresh = [
            queue
            for queue in queues.split(",")
            if queue not in purged and not Job.objects.filter(queue=queue, status=JobStatus.QUEUED).exists()
        ]
        purged.update(_purge_stale_messages(fresh))
        log = tmp_path / f"worker{len(started)}.log"
        worker = WorkerProcess(_worker_environment(extra_env), log, queues)
        worker.start()
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


def wait_until(predicate: Callable[[], bool], timeout: float, message: str) -> None:
    """Poll until the predicate holds; fail with the message after the timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    pytest.fail(message)


@pytest.fixture(scope="session")
def chromium_path() -> str:
    if not CHROMIUM.exists() or shutil.which("chromium") is None:
        skip_or_fail("Debian's chromium is not installed (apt-get install chromium chromium-driver)")
    return str(CHROMIUM)


@pytest.fixture
def open_browser_page(chromium_path: str, live_server: object) -> Callable[..., AbstractContextManager[Any]]:
    """Return a function that opens a Playwright page in real headless Chromium beside the live test
    server; it takes extra Chromium flags, and browser-context options such as `permissions`."""

    @contextmanager
    def open_page(*extra_args: str, **context_options: Any) -> Iterator[Any]:
        from playwright.sync_api import sync_playwright

        # Playwright's sync API runs an event loop; Django must allow ORM calls from test code anyway.
        os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium_path,
                args=[
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-quic",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    *extra_args,
                ],
            )
            # Playwright's wait_for_function evaluates its predicate with eval, which the site's
            # Content-Security-Policy forbids; test_content_security_policy.py passes bypass_csp=False.
            context = browser.new_context(**{"bypass_csp": True, **context_options})
            page = context.new_page()
            page.set_default_timeout(15_000)
            try:
                yield page
            finally:
                context.close()
                browser.close()
                # ORM calls made while Playwright's loop runs get connections of their own context
                # (asgiref locals); close them here, or PostgreSQL cannot drop the test database.
                from django.db import connections

                connections.close_all()

    return open_page


@pytest.fixture
def browser_page(open_browser_page: Callable[..., AbstractContextManager[Any]]) -> Iterator[object]:
    """A Playwright page in real headless Chromium, pointed at the live test server."""
    with open_browser_page() as page:
        yield page


# Set ECHOSTUDIO_SCREENSHOTS=/some/folder to keep every test's screenshots there, one folder per test.
SCREENSHOTS_KEPT_IN = "ECHOSTUDIO_SCREENSHOTS"


@pytest.fixture
def screenshots(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A folder for the test's screenshots inside its own tmp_path, so no two tests (nor two runs at
    once) write the same file. Its path is printed and recorded in the report (junit `screenshots`
    property); with ECHOSTUDIO_SCREENSHOTS set they are also copied there for a person to look at."""
    folder = tmp_path / "screenshots"
    folder.mkdir()
    request.node.user_properties.append(("screenshots", str(folder)))
    yield folder
    if not any(folder.iterdir()):
        return
    kept_in = os.environ.get(SCREENSHOTS_KEPT_IN, "")
    if kept_in:
        target = Path(kept_in) / re.sub(r"[^\w.-]+", "_", request.node.nodeid)
        shutil.copytree(folder, target, dirs_exist_ok=True)
        folder = target
    print(f"screenshots of {request.node.nodeid}: {folder}")


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: object) -> None:
    # Real hashers cost ~0.5 s per user on this machine; the hash itself is not what tests check.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # type: ignore[attr-defined]


def _refuse_update_through_a_join(execute: Callable[..., Any], sql: str, *args: Any) -> Any:
    # Django turns an update whose filter joins another table into `WHERE id IN (SELECT …)`; as a
    # compare-and-set that loses a concurrent save on PostgreSQL (webapp.db.compare_and_set).
    # Any such UPDATE that the code under test sends fails the test, whichever database it runs on.
    if sql.lstrip().upper().startswith("UPDATE") and _UPDATE_THROUGH_A_JOIN.search(sql):
        raise AssertionError(f"an UPDATE conditioned through a join (use compare_and_set): {sql[:300]}")
    return execute(sql, *args)


_UPDATE_THROUGH_A_JOIN = re.compile(r"\bIN \(SELECT\b", re.IGNORECASE)


@pytest.fixture(autouse=True)
def _updates_condition_their_own_rows() -> Iterator[None]:
    with connection.execute_wrapper(_refuse_update_through_a_join):
        yield

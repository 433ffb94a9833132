"""The production grants of docs/deployment.md: a database user that may only INSERT and SELECT the
audit table writes entries through the app and is refused every UPDATE, DELETE and TRUNCATE."""

from __future__ import annotations

import re
import secrets
from pathlib import Path

import pytest
from django.db import ProgrammingError, connection, transaction

from tests.conftest import only_on_postgresql
from tests.factories import ItemFactory
from webapp.archive import archive
from webapp.models import AuditEntry

DEPLOYMENT = (Path(__file__).resolve().parents[2] / "docs" / "deployment.md").read_text()
AUDIT_GRANTS = re.compile(
    r"^(REVOKE ALL ON webapp_auditentry.*|GRANT .* webapp_auditentry.*);$", re.MULTILINE
)


def _as_app_user(cursor, role: str) -> None:
    cursor.execute(f"SET LOCAL ROLE {role}")


@pytest.mark.django_db
def test_the_documented_app_user_may_only_append_to_the_audit_log(make_user) -> None:
    only_on_postgresql("the grants are PostgreSQL's")
    admin = make_user()
    role = f"audit_probe_{secrets.token_hex(4)}"  # created in the test's transaction: rolled back with it
    statements = AUDIT_GRANTS.findall(DEPLOYMENT)
    assert len(statements) == 3, statements
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE ROLE {role} NOLOGIN")
        cursor.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}")
        cursor.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}")
        for statement in statements:
            cursor.execute(statement.replace("echostudio_app", role))
        _as_app_user(cursor, role)
    # The app, as that user, archives an item: the change and its entry are written.
    item = ItemFactory.create()
    archive(item, actor=admin, reason="duplicate")
    entry = AuditEntry.objects.latest("pk")
    assert entry.object_id == str(item.pk)
    for sql in (
        "UPDATE webapp_auditentry SET action = 'rewritten'",
        "DELETE FROM webapp_auditentry",
        "TRUNCATE webapp_auditentry",
    ):
        with pytest.raises(ProgrammingError, match="permission denied"), transaction.atomic():
            connection.cursor().execute(sql)
    assert AuditEntry.objects.get(pk=entry.pk).action == "archive"

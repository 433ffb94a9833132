"""A refused request is logged as one line, without the traceback Django attaches to it."""

from __future__ import annotations

import logging

import pytest
from django.urls import reverse


def test_a_403_is_logged_without_a_traceback(client_for, caplog: pytest.LogCaptureFixture) -> None:
    # An actor opening the admin dashboard is refused (PermissionDenied from role_required).
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = client_for("actor").get(reverse("annotation:admin_dashboard"))

    assert response.status_code == 403
    (record,) = [r for r in caplog.records if r.name == "django.request"]
    assert record.getMessage().startswith("Forbidden (Permission denied):")
    assert record.exc_info is None and "Traceback" not in caplog.text

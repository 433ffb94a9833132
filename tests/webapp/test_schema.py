"""The OpenAPI schema is valid OpenAPI 3."""

from __future__ import annotations

import yaml
from django.urls import reverse
from openapi_spec_validator import validate


def test_schema_validates_as_openapi_3(client_for) -> None:
    response = client_for("admin").get(reverse("api_schema"))
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    assert schema["openapi"].startswith("3.")
    validate(schema)

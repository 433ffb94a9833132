"""The OpenAPI schema describes every endpoint of the API, its token scheme and its error shape."""

from __future__ import annotations

import yaml
from django.urls import reverse
from openapi_spec_validator import validate

from tests.webapp.api.test_access import ENDPOINTS


def test_every_endpoint_is_described_with_its_token_scheme_and_validates(client_for) -> None:
    schema = yaml.safe_load(client_for("admin").get(reverse("api_schema")).content)
    validate(schema)
    assert schema["components"]["securitySchemes"]["tokenAuth"]["name"] == "Authorization"
    for method, path, _ in ENDPOINTS:
        template = path.split("?")[0].replace("999", "{id}").replace("EE-none", "{external_id}")
        operation = schema["paths"][template][method]
        assert operation.get("summary") or operation.get("description"), template
        assert {"tokenAuth": []} in operation["security"], template


def test_refusals_are_documented_in_the_one_error_shape(client_for) -> None:
    schema = yaml.safe_load(client_for("admin").get(reverse("api_schema")).content)
    problem = schema["components"]["schemas"]["Problem"]
    assert set(problem["required"]) == {"detail", "problems"}
    assert "$ref" in str(schema["paths"]["/api/judge-runs/"]["post"]["responses"]["409"])

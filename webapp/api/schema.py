"""The OpenAPI schema, built once per process.

drf-spectacular builds the schema on every request and imports its optional extensions while
doing so; twenty simultaneous requests raced those imports and 3 of 14 answered 500
(`ModuleNotFoundError: No module named 'django_filters'`). The schema depends on the code, not on
the request (it is served public, to every signed-in user alike), so the first request builds it
under a lock and the others are served the same document.
"""

from __future__ import annotations

import threading
from typing import Any

from drf_spectacular.views import SpectacularAPIView
from rest_framework.request import Request
from rest_framework.response import Response

_lock = threading.Lock()
_built: dict[str | None, Any] = {}


class SchemaView(SpectacularAPIView):
    def _get_schema_response(self, request: Request) -> Response:
        version = self.api_version or request.version or self._get_version_parameter(request)
        with _lock:
            if version not in _built:
                _built[version] = super()._get_schema_response(request).data
            schema = _built[version]
        return Response(
            data=schema,
            headers={"Content-Disposition": f'inline; filename="{self._get_filename(request, version)}"'},
        )

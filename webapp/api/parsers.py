"""Request parsers for uploads sent as a raw body (CSV or JSONL), as scripts with curl do."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from rest_framework.parsers import BaseParser


class RawFile(dict[str, Any]):
    """A raw request body, with the file name its content type implies (a dict, as DRF wants data)."""

    def __init__(self, data: bytes, name: str) -> None:
        super().__init__()
        self.data = data
        self.name = name


class CsvParser(BaseParser):
    media_type = "text/csv"

    def parse(
        self,
        stream: IO[bytes],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> RawFile:
        return RawFile(stream.read(), "upload.csv")


class JsonLinesParser(BaseParser):
    media_type = "application/x-ndjson"

    def parse(
        self,
        stream: IO[bytes],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> RawFile:
        return RawFile(stream.read(), "upload.jsonl")

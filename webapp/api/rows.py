"""A serializer's JSON from `.values()` rows: the same documents without model instances or DRF's
per-cell machinery (issue 27).

A page of 30 annotations spent more of its time in DRF than in the database: a ModelSerializer
builds its fields anew on every request, then walks every cell through `get_attribute` and
`to_representation`. The serializer stays the one definition of the shape (the OpenAPI schema is
read from it); `RowShape` reads it once, turns each field's source into a `.values()` path, and
writes each row as `Serializer.to_representation` would: None stays None, anything else goes
through the field's own `to_representation` (so dates are DRF's ISO format in the current time
zone). Only plain fields are accepted, and a source that crosses a nullable relation must default
to None, as DRF answers a missing relation then (a LEFT JOIN's NULL here).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.db.models import ForeignKey, Model, QuerySet
from rest_framework import fields, serializers

PLAIN_FIELDS = (
    fields.BooleanField,
    fields.CharField,
    fields.ChoiceField,
    fields.DateTimeField,
    fields.FloatField,
    fields.IntegerField,
    fields.JSONField,
)


class RowShape:
    """The documents `serializer_class` makes, from `.values()` rows or from one instance."""

    def __init__(self, serializer_class: type[serializers.Serializer[Any]]) -> None:
        model: type[Model] = serializer_class.Meta.model  # type: ignore[attr-defined]
        self._fields: list[tuple[str, tuple[str, ...], Any]] = []  # name, source path, field
        for name, field in serializer_class().fields.items():
            if field.write_only:  # never in a document (DRF's `_readable_fields`)
                continue
            where = f"{serializer_class.__name__}.{name}"
            if not isinstance(field, PLAIN_FIELDS) or (isinstance(field, fields.JSONField) and field.binary):
                raise TypeError(f"{where} is not a plain field")
            if not isinstance(field.source, str) or field.source == "*":
                raise TypeError(f"{where} reads no column")
            path = tuple(field.source.split("."))
            if _crosses_nullable_relation(model, path, where) and not (
                field.default is None or field.allow_null
            ):
                raise TypeError(f"{where} crosses a nullable relation without default=None")
            self._fields.append((name, path, field))
        self.columns = tuple("__".join(path) for _, path, _ in self._fields)
        self._plan = [
            (name, column, field.to_representation)
            for (name, _, field), column in zip(self._fields, self.columns, strict=True)
        ]

    def values(self, rows: QuerySet[Any]) -> QuerySet[Any]:
        """Return `rows` read as the values the documents need (the columns shown, joins included)."""
        return rows.values(*self.columns)

    def documents(self, rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Return the document of each row `values` read."""
        plan = self._plan
        return [
            {name: None if (value := row[column]) is None else show(value) for name, column, show in plan}
            for row in rows
        ]

    def document_of(self, instance: Model) -> dict[str, Any]:
        """Return the document of one instance (its relations read as DRF would read them)."""
        document: dict[str, Any] = {}
        for name, path, field in self._fields:
            value: Any = instance
            for step in path:
                value = getattr(value, step)
                if value is None:
                    break
            document[name] = None if value is None else field.to_representation(value)
        return document


@cache
def row_shape(serializer_class: type[serializers.Serializer[Any]]) -> RowShape:
    """Return the (once built) RowShape of a serializer class."""
    return RowShape(serializer_class)


def _crosses_nullable_relation(model: type[Model], path: tuple[str, ...], where: str) -> bool:
    """Return True when a step of `path` before its column is a nullable foreign key; raise when
    the path is not foreign keys to a column (a reverse relation has many rows, a property none)."""
    crosses_null = False
    for step in path[:-1]:
        relation = _field(model, step, where)
        if not isinstance(relation, ForeignKey):
            raise TypeError(f"{where}: {model.__name__}.{step} is not a foreign key")
        crosses_null = crosses_null or relation.null
        model = relation.related_model  # type: ignore[assignment]  # resolved by now, never "self"
    if _field(model, path[-1], where).is_relation:
        raise TypeError(f"{where}: {model.__name__}.{path[-1]} is a relation, not a column")
    return crosses_null


def _field(model: type[Model], name: str, where: str) -> Any:
    try:
        return model._meta.get_field(name)
    except FieldDoesNotExist:
        raise TypeError(f"{where}: {model.__name__}.{name} is not a column") from None

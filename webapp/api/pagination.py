"""Cursor pagination for every list: stable while rows are added, and one indexed range scan per page
however deep the page (no OFFSET, no COUNT over 100K rows)."""

from __future__ import annotations

from rest_framework.pagination import CursorPagination


class IdCursorPagination(CursorPagination):
    """Pages of `page_size` rows (default 100, at most 1000) in id order; `next` links the next page."""

    ordering = "id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000


class NewestFirstPagination(IdCursorPagination):
    ordering = "-id"

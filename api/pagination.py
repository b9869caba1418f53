"""Paging of the API's long lists without counting them, for clients that ask.

``CountOrCursorPagination`` pages a list as DRF's ``PageNumberPagination`` does (``?page=N``;
``{"count", "next", "previous", "results"}``), which counts every row of the list on every
page, unless the request carries ``cursor`` (``?cursor=`` with an empty value starts at the
first row): then it walks the list by DRF's ``CursorPagination`` in primary-key order and
answers ``{"next", "previous", "results"}`` without ``count``. Each cursor page is
``page_size + 1`` rows read from the list's index after the last row's id: no ``COUNT``, no
``OFFSET``, as cheap on the millionth row as on the first. ``next`` and ``previous`` carry the
cursor, so a client that follows them stays in cursor mode; a client that never sends
``cursor`` sees the same responses as before. The shape is in the OpenAPI schema (``count``
present only without ``cursor``) and in README.md, "Imports, releases and the REST API".

A list paged this way must be ordered by its primary key (the walk's order) and be served by
an index whose last column is the id (the item list: ``item_project_status_id_idx``).
"""

from __future__ import annotations

from base64 import b64decode
from typing import Any

from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination, PageNumberPagination
from rest_framework.response import Response

#: The query parameter that switches a list to cursor pages.
CURSOR = "cursor"


#: The largest id a row can have: ids are 64-bit (settings.DEFAULT_AUTO_FIELD, BigAutoField).
LARGEST_ID = 2**63 - 1


class _ByPrimaryKey(CursorPagination):
    """DRF's cursor pages in primary-key order. A cursor is only what these pages hand out:
    strict base64 (DRF's own decoding skips the characters that are not base64, so any text
    became some cursor, most often the first page's) whose position, if it has one, is an id
    (digits, 1 to LARGEST_ID). Anything else is refused as an invalid cursor, 404 in the API's
    format, before the database is asked (tests/api/test_pagination.py)."""

    cursor_query_param = CURSOR
    ordering = "pk"

    def decode_cursor(self, request: Any) -> Any:
        encoded = request.query_params.get(self.cursor_query_param)
        if encoded:  # empty: the first page
            try:
                b64decode(encoded, validate=True)
            except ValueError:  # binascii.Error, and text that is not ASCII
                raise NotFound(self.invalid_cursor_message) from None
        cursor = super().decode_cursor(request)
        if cursor is not None and cursor.position is not None:
            position = cursor.position
            if not (position.isascii() and position.isdigit()) or not (
                1 <= int(position) <= LARGEST_ID
            ):
                raise NotFound(self.invalid_cursor_message)
        return cursor


class CountOrCursorPagination(PageNumberPagination):
    """Numbered pages with a count (the default), or cursor pages without one when the request
    carries ``cursor`` (the module docstring)."""

    def __init__(self) -> None:
        self._cursor: _ByPrimaryKey | None = None

    def paginate_queryset(self, queryset: Any, request: Any, view: Any = None) -> Any:
        if CURSOR in request.query_params:
            self._cursor = _ByPrimaryKey()
            return self._cursor.paginate_queryset(queryset, request, view)
        return super().paginate_queryset(queryset, request, view)

    def get_paginated_response(self, data: Any) -> Response:
        if self._cursor is not None:
            return self._cursor.get_paginated_response(data)
        return super().get_paginated_response(data)

    def get_paginated_response_schema(self, schema: Any) -> dict[str, Any]:
        numbered = super().get_paginated_response_schema(schema)
        numbered["required"] = ["next", "previous", "results"]
        numbered["properties"]["count"]["description"] = (
            "How many rows the whole list holds; absent from cursor pages (requests with "
            "`cursor`), which never count."
        )
        numbered["properties"]["next"]["description"] = (
            "The next page's URL (null on the last page); on a cursor page it carries the cursor."
        )
        numbered["properties"]["previous"]["description"] = (
            "The previous page's URL (null on the first page)."
        )
        return numbered

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        parameters.append(
            {
                "name": CURSOR,
                "required": False,
                "in": "query",
                "description": (
                    "Cursor pages instead of numbered ones: send it empty (`?cursor=`) for the "
                    "first page, then follow `next`. Cursor pages hold the same rows in id "
                    "order, without `count` (nothing is counted), and ignore `page`."
                ),
                "schema": {"type": "string"},
            }
        )
        return parameters

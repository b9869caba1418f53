"""The API's JSON parser: request bodies read by the rules every import follows.

``JSONParser`` replaces DRF's (settings ``REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]``; plug-in
endpoints that list their parsers name it too, e.g. graphs/api.py). It reads the body with
``imports.core.readers.read_json_document``: UTF-8, nested at most
``annotation.values.MAX_DEPTH`` levels (checked before decoding, so a body nested 100,000 deep
costs a scan, not a crash), no NaN or Infinity, and no value the database cannot store (NUL, an
unpaired surrogate, a number no Python number holds). Anything else is a 400 in the API's one
error format (api/errors.py) before any view runs, on every endpoint, signed in or not:
``{"message": "The request body cannot be read: line 1, column 65: nested more than 64 levels
deep …", "extra": {"body": {"line": 1, "column": 65, "field": null, "code": "too_deep"}}}``; a
value is named by its path (``"field": "payload.comment"``).
"""

from __future__ import annotations

from typing import Any

from rest_framework import parsers

from annotation.errors import ApplicationError
from imports.core.readers import ImportFileError, read_json_document


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, reading within the limits above (media type application/json)."""

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        data = stream.read() if stream is not None else b""
        try:
            return read_json_document(data, at_end="the body ends")
        except ImportFileError as refused:
            error = refused.error
            raise ApplicationError(
                f"The request body cannot be read: {error.message}.",
                {
                    "body": {
                        "line": error.line,
                        "column": error.column,
                        "field": error.field,
                        "code": error.code,
                    }
                },
            ) from None

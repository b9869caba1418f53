"""The engine's middleware: archived projects are read-only (annotation/access.py, "Archived
projects are read-only").

``ArchivedProjectsReadOnly`` marks each request that asks to change something (any method but
GET, HEAD, OPTIONS and TRACE) for the time its view runs; ``annotation.access.access_project``
then refuses an archived project. The decision stays in access.py: this only says what the
request is, so pages, htmx requests and the REST API (whose token sign-in happens inside the
view, after any middleware) are guarded alike.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase

from annotation.access import changing_request

#: Methods that only read (RFC 9110's safe methods).
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


class ArchivedProjectsReadOnly:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        with changing_request(request.method not in SAFE_METHODS):
            return self.get_response(request)

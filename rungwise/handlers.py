"""Django's request handlers with a second, shorter middleware chain for the annotator loop's
plain token requests (rungwise/wsgi.py serves :class:`WSGIHandler`).

Why: ``POST /api/stages/<id>/next/`` and ``POST /api/assignments/<id>/submit/`` are most of the
requests a busy deployment serves, and on them every middleware layer costs CPU (a call and an
exception guard per layer, and each layer's own work: the messages storage built, the CSRF
cookie looked for, the static-file check) for requests that use none of it
(benchmarks/profile_loop.py; benchmarks/levers.py, lever ``chain``).

Which requests: ``settings.LEAN_REQUEST_PATH`` (the two paths, matched in full on the path
without the script prefix), method POST, an ``Authorization: Token …`` header and **no cookie at
all** (no Cookie header, or an empty one) — a script's request, as benchmarks/annotator_loop.py and the annotator
clients send it. They pass through ``settings.MIDDLEWARE`` without the entries listed in
``settings.LEAN_MIDDLEWARE_SKIPPED`` (settings.py says why each one has nothing to do on such a
request), in the same order; every other middleware — security headers, CommonMiddleware's host
check, sessions and authentication (DRF's fallback reads the session user, so the answer's
``Vary: Cookie`` is the same), X-Frame-Options, the Content-Security-Policy, archived projects
read-only, the SQL-count header — runs as for any request. A middleware added to MIDDLEWARE is
therefore on the short chain too unless it is listed as skipped. Every other request takes the
full chain. Tests: tests/rungwise/test_handlers.py (the same answers, headers included, down
both chains).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, MiddlewareNotUsed
from django.core.handlers import base, wsgi
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpRequest
from django.utils.module_loading import import_string


class _ChainHandler(base.BaseHandler):
    """A synchronous handler whose middleware chain is the list it is given (instead of
    settings.MIDDLEWARE), built as BaseHandler.load_middleware builds a synchronous chain: each
    middleware wraps the next, its process_view / process_template_response /
    process_exception hooks registered in the same order."""

    def __init__(self, middleware: list[str]) -> None:
        self._view_middleware: list[Callable[..., Any]] = []
        self._template_response_middleware: list[Callable[..., Any]] = []
        self._exception_middleware: list[Callable[..., Any]] = []
        # BaseHandler._get_response (resolve, view middleware, the view): not in django-stubs
        handler = convert_exception_to_response(self._get_response)  # type: ignore[attr-defined]
        for path in reversed(middleware):
            factory = import_string(path)
            if not getattr(factory, "sync_capable", True):
                raise ImproperlyConfigured(f"Middleware {path} cannot serve a WSGI request.")
            try:
                instance = factory(handler)
            except MiddlewareNotUsed:
                continue
            if instance is None:
                raise ImproperlyConfigured(f"Middleware factory {path} returned None.")
            if hasattr(instance, "process_view"):
                self._view_middleware.insert(0, instance.process_view)
            if hasattr(instance, "process_template_response"):
                self._template_response_middleware.append(instance.process_template_response)
            if hasattr(instance, "process_exception"):
                self._exception_middleware.append(instance.process_exception)
            handler = convert_exception_to_response(instance)
        self._middleware_chain = handler


@cache
def _lean_path(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def lean_request(request: HttpRequest) -> bool:
    """Whether `request` takes the short chain (module docstring)."""
    meta = request.META
    return (
        request.method == "POST"
        and not meta.get("HTTP_COOKIE")
        and meta.get("HTTP_AUTHORIZATION", "")[:6].lower() == "token "
        and bool(settings.LEAN_REQUEST_PATH)
        and _lean_path(settings.LEAN_REQUEST_PATH).fullmatch(request.path_info) is not None
    )


class LeanChain(base.BaseHandler):
    """A handler that sends lean_request()s down MIDDLEWARE without LEAN_MIDDLEWARE_SKIPPED
    and everything else down the full chain. Mixed in before Django's WSGIHandler here and
    before its test ClientHandler in tests/rungwise/test_handlers.py; ``lean = False`` on a class (or an instance) sends
    every request down the full chain (benchmarks/levers.py)."""

    lean = True
    _short: _ChainHandler | None = None

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async)
        skipped = set(settings.LEAN_MIDDLEWARE_SKIPPED)
        self._short = (
            None
            if is_async
            else _ChainHandler([path for path in settings.MIDDLEWARE if path not in skipped])
        )

    def get_response(self, request):
        if self.lean and self._short is not None and lean_request(request):
            return self._short.get_response(request)
        return super().get_response(request)


class WSGIHandler(LeanChain, wsgi.WSGIHandler):
    """Django's WSGI handler with the short chain (rungwise/wsgi.py)."""

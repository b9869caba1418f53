"""One error format for the API: {"message": str, "extra": dict}."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from annotation.errors import ApplicationError


def _flatten(detail: Any) -> str:
    if isinstance(detail, list):
        return " ".join(_flatten(part) for part in detail)
    if isinstance(detail, dict):
        return " ".join(f"{key}: {_flatten(value)}" for key, value in detail.items())
    return str(detail)


#: Seconds a client is asked to wait when the database does not answer.
DATABASE_RETRY_AFTER = 2


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ApplicationError):
        return Response({"message": exc.message, "extra": exc.extra}, status=exc.status)
    if isinstance(exc, (OperationalError, InterfaceError)):
        # The database is restarting, unreachable or cut the connection (benchmarks/soak.py
        # restarts it): temporary, so 503 in the API's format, not a 500 page. Django drops
        # the broken connection at the end of the request; a retried submit is idempotent.
        return Response(
            {
                "message": "The database is not answering right now (it may be restarting); "
                "try again in a moment.",
                "extra": {},
            },
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": str(DATABASE_RETRY_AFTER)},
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound("Not found.")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    detail = response.data
    if isinstance(exc, exceptions.ValidationError):
        message = "The request is invalid: " + _flatten(detail)
        extra = detail if isinstance(detail, dict) else {"errors": detail}
    else:
        message = _flatten(detail.get("detail", detail) if isinstance(detail, dict) else detail)
        extra = {}
    response.data = {"message": message, "extra": extra}
    if response.status_code == status.HTTP_429_TOO_MANY_REQUESTS:
        response.data["extra"]["retry_after"] = getattr(exc, "wait", None)
    return response

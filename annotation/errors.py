"""The one error type for domain failures (CONTRIBUTING.md, "One error type").

Services raise ApplicationError with a message a person can act on and `extra` details (field
names, line numbers). The API maps it to {"message", "extra"} with `status`; htmx views re-render
it as a form error.
"""

from __future__ import annotations

from typing import Any


class ApplicationError(Exception):
    status = 400

    def __init__(
        self, message: str, extra: dict[str, Any] | None = None, *, status: int | None = None
    ):
        super().__init__(message)
        self.message = message
        self.extra = extra or {}
        if status is not None:
            self.status = status


class PermissionDenied(ApplicationError):
    status = 403


class NotFound(ApplicationError):
    status = 404


class Conflict(ApplicationError):
    status = 409

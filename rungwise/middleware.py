"""The project's middleware: the SQL-count header for benchmarks (enabled only by the
RUNGWISE_QUERY_COUNT_HEADER environment variable) and the Content-Security-Policy header."""

from __future__ import annotations

import csp.middleware
from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject
from csp.utils import build_policy
from django.conf import settings
from django.core.signals import setting_changed
from django.db import connection
from django.dispatch import receiver

_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT")


class QueryCountHeaderMiddleware:
    """Adds `X-SQL-Statements`: statements the request ran, transaction control left out."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        count = 0

        def counter(execute, sql, params, many, context):
            nonlocal count
            if not sql.lstrip().upper().startswith(_CONTROL):
                count += 1
            return execute(sql, params, many, context)

        with connection.execute_wrapper(counter):
            response = self.get_response(request)
        response["X-SQL-Statements"] = str(count)
        return response


class CSPMiddleware(csp.middleware.CSPMiddleware):
    """django-csp's middleware with the site's policy built once per process.

    django-csp rebuilds the header from settings on every response (two dataclass copies and a
    policy assembly per request: about 3 % of the annotator loop's CPU). A response that no view
    decorated (``csp_update``/``csp_replace``/``csp_exempt``, as crowd/views.py does) and whose
    request never asked for a nonce gets the same header every time, so it is taken from a
    cache filled on first use and emptied when settings change (tests override them). Every
    other response goes through django-csp unchanged.
    """

    _PER_RESPONSE = (
        "_csp_config",
        "_csp_update",
        "_csp_replace",
        "_csp_exempt",
        "_csp_config_ro",
        "_csp_update_ro",
        "_csp_replace_ro",
        "_csp_exempt_ro",
    )
    _headers: tuple[tuple[str, str], ...] | None = None

    @classmethod
    def _site_headers(cls) -> tuple[tuple[str, str], ...]:
        if cls._headers is None:
            found = []
            for name, setting, report_only in (
                (HEADER, "CONTENT_SECURITY_POLICY", False),
                (HEADER_REPORT_ONLY, "CONTENT_SECURITY_POLICY_REPORT_ONLY", True),
            ):
                policy = getattr(settings, setting, None) or {}
                if policy.get("EXCLUDE_URL_PREFIXES"):
                    return ()  # per path: leave it to django-csp
                value = build_policy(report_only=report_only)
                if value:
                    found.append((name, value))
            cls._headers = tuple(found)
        return cls._headers

    def process_response(self, request, response):
        headers = self._site_headers()
        if (
            not headers
            or getattr(request, "_csp_nonce", None) is not None
            or any(hasattr(response, name) for name in self._PER_RESPONSE)
            or settings.DEBUG
        ):
            return super().process_response(request, response)
        for name, value in headers:
            if name not in response:
                response[name] = value
        # As django-csp does: a nonce asked for after the header is written is an error.
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)
        return response


@receiver(setting_changed)
def _csp_settings_changed(setting, **kwargs) -> None:
    if setting.startswith("CONTENT_SECURITY_POLICY") or setting == "DEBUG":
        CSPMiddleware._headers = None

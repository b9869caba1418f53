"""Diagnostics middleware, enabled only by the RUNGWISE_QUERY_COUNT_HEADER environment variable
(benchmarks use it to count SQL statements per request from outside the server)."""

from __future__ import annotations

from django.db import connection

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

"""Liveness/readiness probe for load balancers and docker-compose health checks."""

from __future__ import annotations

from django.db import connection
from django.http import JsonResponse


def healthz(request):
    """200 when the database answers; reports which database and task mode are in use."""
    from django.conf import settings

    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        database = "ok"
    except Exception as error:  # the probe must answer, not raise
        return JsonResponse({"status": "error", "database": str(error)}, status=503)
    return JsonResponse(
        {
            "status": "ok",
            "database": database,
            "engine": connection.vendor,
            "tasks": "in-process" if settings.CELERY_TASK_ALWAYS_EAGER else "celery",
        }
    )

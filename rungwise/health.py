"""Liveness/readiness probe for load balancers and docker-compose health checks."""

from __future__ import annotations

import logging

from django.db import connection
from django.http import JsonResponse

logger = logging.getLogger(__name__)


def healthz(request):
    """200 when the database answers; reports which database and task mode are in use."""
    from django.conf import settings

    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        database = "ok"
    except Exception:  # the probe must answer, not raise; details go to the log, not the world
        logger.exception("health check: the database does not answer")
        return JsonResponse({"status": "error", "database": "unavailable"}, status=503)
    return JsonResponse(
        {
            "status": "ok",
            "database": database,
            "engine": connection.vendor,
            "tasks": "in-process" if settings.CELERY_TASK_ALWAYS_EAGER else "celery",
        }
    )

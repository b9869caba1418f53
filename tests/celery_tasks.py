"""Tasks only the worker tests load (`celery worker --include tests.celery_tasks`)."""

from __future__ import annotations

import time
from pathlib import Path

from celery import shared_task


@shared_task(name="tests.celery_tasks.sleep", acks_late=True)
def sleep(seconds: float, marker: str) -> None:
    """Write ``marker``.started, sleep, write ``marker``.done: a long task that the test can
    see running and finished."""
    Path(marker + ".started").touch()
    time.sleep(seconds)
    Path(marker + ".done").touch()

"""The Celery application. Broker and behaviour come from Django settings (CELERY_* names)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")

app = Celery("rungwise")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

"""WSGI entry point (``granian --interface wsgi rungwise.wsgi:application``, see
docker-compose.yml; any WSGI server can serve it).

The URLconf, and with it every view module, DRF, drf-spectacular and Celery's task machinery,
is imported here rather than on the first request: otherwise each web worker's first
request pays about a second of imports (seen as p99 spikes in benchmarks/annotator_loop.py).
"""

import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")
application = get_wsgi_application()
get_resolver().url_patterns  # noqa: B018 — import every URLconf and view module now

"""WSGI entry point (``granian --interface wsgi rungwise.wsgi:application``, see
docker-compose.yml; any WSGI server can serve it).

The URLconf, and with it every view module, DRF, drf-spectacular and Celery's task machinery,
is imported here rather than on the first request: otherwise each web worker's first
request pays about a second of imports (seen as p99 spikes in benchmarks/annotator_loop.py).
Then ``rungwise.warmup`` pays what the first request to each page would still pay (its
templates' compilation; benchmarks/cold_requests.py measures both).
"""

import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")
application = get_wsgi_application()
get_resolver().url_patterns  # noqa: B018 — import every URLconf and view module now

from rungwise.warmup import warm_up  # noqa: E402 (needs the app registry set up above)

warm_up()

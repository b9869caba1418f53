"""WSGI entry point (``granian --interface wsgi rungwise.wsgi:application``, see
docker-compose.yml; any WSGI server can serve it).

The URLconf, and with it every view module, DRF, drf-spectacular and Celery's task machinery,
is imported here rather than on the first request: otherwise each web worker's first
request pays about a second of imports (seen as p99 spikes in benchmarks/annotator_loop.py).
The handler is Django's with a shorter middleware chain for the annotator loop's plain token
requests (rungwise/handlers.py). Then ``rungwise.warmup`` pays what the first request to each page would still pay (its
templates' compilation; benchmarks/cold_requests.py measures both).
"""

import os

import django
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")
django.setup(set_prefix=False)  # as django.core.wsgi.get_wsgi_application does

from rungwise.handlers import WSGIHandler  # noqa: E402 (Django's, with the annotator loop's short chain)

application = WSGIHandler()
get_resolver().url_patterns  # noqa: B018 — import every URLconf and view module now

from rungwise.warmup import warm_up  # noqa: E402 (needs the app registry set up above)

warm_up()

"""A web worker's warm-up: what its first requests would otherwise pay, paid once as it starts
(``rungwise/wsgi.py`` calls ``warm_up`` after loading the app, before the server hands the
worker a request).

Measured with ``benchmarks/cold_requests.py`` (a page as the first request of a fresh worker
against the same page warm): the first request to each page compiled its templates (the cached
loader keeps them per process, compiled on first use) — the base layout, the page and every
include and partial. ``templates_compile`` compiles every template of the repository's own
apps at start, so no request compiles one. The first ``reverse()`` of a worker also filled
Django's URL resolver (every app's ``urls`` imported, the reverse table built: most of what a
ratings page's first request still cost after the templates); ``urls_populate`` fills it at start.

Not done with ``DEBUG`` on (``make run``'s runserver): templates change while one develops, and
the autoreloader starts a new process on every save.
"""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.template import TemplateSyntaxError, engines
from django.template.backends.django import DjangoTemplates
from django.template.utils import get_app_template_dirs
from django.urls import get_resolver

logger = logging.getLogger(__name__)


def _own_template_dirs(engine: DjangoTemplates) -> list[Path]:
    """The template directories of the repository's apps and its ``templates/`` (not those of
    installed packages: the admin's pages are rarely the first a worker serves)."""
    base = Path(settings.BASE_DIR).resolve()
    dirs = [Path(str(path)) for path in (*engine.engine.dirs, *get_app_template_dirs("templates"))]
    return [
        path for path in dirs if path.resolve().is_relative_to(base) and ".venv" not in path.parts
    ]


def templates_compile() -> int:
    """Compile (into the cached loader) every ``.html`` template of the repository's own
    template directories; return how many. A template that does not compile is logged and
    skipped: the request that uses it reports the error as it always did."""
    compiled = 0
    for engine in engines.all():
        if not isinstance(engine, DjangoTemplates):
            continue
        names: set[str] = set()
        for directory in _own_template_dirs(engine):
            names.update(str(path.relative_to(directory)) for path in directory.rglob("*.html"))
        for name in sorted(names):
            try:
                engine.get_template(name)
            except TemplateSyntaxError:
                logger.warning("warm-up: template %s does not compile", name, exc_info=True)
                continue
            compiled += 1
    return compiled


def urls_populate() -> int:
    """Fill the root URL resolver's reverse table (what the first ``reverse()`` would do);
    return how many names it holds."""
    return len(get_resolver().reverse_dict)


def warm_up() -> None:
    """Everything this module warms, once per process; nothing with ``DEBUG`` on."""
    if settings.DEBUG:
        return
    templates_compile()
    urls_populate()

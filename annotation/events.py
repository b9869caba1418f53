"""The engine's outgoing events: other apps subscribe here, the engine never imports them.

An app registers a listener in its AppConfig.ready(); the engine calls every listener after the
work it reports has committed (from a Celery task or a sweep), so a listener may read the new
state and enqueue work of its own. A failing listener is logged and does not stop the others or
undo the engine's work: listeners keep derived data (agreement figures, caches), and their own
sweeps must repair what a failure missed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

logger = logging.getLogger(__name__)

ResolvedListener = Callable[[Iterable[int]], None]
_resolved_listeners: list[ResolvedListener] = []


def on_item_stages_resolved(listener: ResolvedListener) -> ResolvedListener:
    """Call ``listener(item_stage_ids)`` whenever the engine resolved item stages. Registering
    the same function twice keeps one registration."""
    if listener not in _resolved_listeners:
        _resolved_listeners.append(listener)
    return listener


def item_stages_resolved(item_stage_ids: Iterable[int]) -> None:
    """Tell every listener that these item stages were resolved (after commit)."""
    ids = list(item_stage_ids)
    if not ids:
        return
    for listener in list(_resolved_listeners):
        try:
            listener(ids)
        except Exception:
            logger.exception("listener %r failed for resolved item stages %s", listener, ids[:10])

"""The engine's outgoing events: other apps subscribe here, the engine never imports them.

Two kinds of event:

* ``on_item_stage_decided(listener)``: called with ``(item_stage, resolution)`` *inside* the
  transaction that decided an item stage (by its policy or by a reviewer), after the outcome's
  route was followed. For work that must happen together with the decision or not at all — a
  workflow whose decision changes *other* items (CausalT5k's near-duplicate queue discards the
  cluster's other cases and opens the survivor). A listener that raises rolls the decision
  back; listeners should be quick and act only on their own kinds (``item_stage.stage.kind``).
* ``on_item_stages_resolved(listener)``, below: after commit, for derived data.

An app registers a listener in its AppConfig.ready(); the engine calls every resolved-listener after the
work it reports has committed (from a Celery task or a sweep), so a listener may read the new
state and enqueue work of its own. A failing listener is logged and does not stop the others or
undo the engine's work: listeners keep derived data (agreement figures, caches), and their own
sweeps must repair what a failure missed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

logger = logging.getLogger(__name__)

ResolvedListener = Callable[[Iterable[int]], None]
_resolved_listeners: list[ResolvedListener] = []
DecidedListener = Callable[[Any, Any], None]
_decided_listeners: list[DecidedListener] = []


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


def on_item_stage_decided(listener: DecidedListener) -> DecidedListener:
    """Call ``listener(item_stage, resolution)`` inside the transaction of every decision (see
    the module docstring). Registering the same function twice keeps one registration."""
    if listener not in _decided_listeners:
        _decided_listeners.append(listener)
    return listener


def item_stage_decided(item_stage: Any, resolution: Any) -> None:
    """Run the decided-listeners (the engine calls this after following a decision's route);
    an exception propagates and rolls the decision back."""
    for listener in list(_decided_listeners):
        listener(item_stage, resolution)


# --- Answers stored ----------------------------------------------------------------------------
#
# ``on_answers_stored(listener)``: called with ``(stage, item_stage_ids)`` after the transaction
# of a submit that stored a new answer has committed (annotation/services/submit.py, every path:
# pages, htmx, the API, a model rater's wave). ``stage`` is the Stage the submit read (read it,
# never write it); ``item_stage_ids`` the item stages of that stage that got an answer. For
# work that follows answers before any item resolves (ratings' live stopping). Same contract as
# the resolved-listeners: a failing listener is logged and changes nothing of the submit. A
# listener runs in the submitting request: it must be quick (decide from ``stage`` alone
# whether it cares, without a query, since it is called for every answer of every stage) and
# send anything slow to a task.

StoredListener = Callable[[Any, list[int]], None]
_stored_listeners: list[StoredListener] = []


def on_answers_stored(listener: StoredListener) -> StoredListener:
    """Call ``listener(stage, item_stage_ids)`` after every committed submit (see above).
    Registering the same function twice keeps one registration."""
    if listener not in _stored_listeners:
        _stored_listeners.append(listener)
    return listener


def has_stored_listeners() -> bool:
    """Whether anyone listens for stored answers (the submit skips the event when no one does)."""
    return bool(_stored_listeners)


def answers_stored(stage: Any, item_stage_ids: Iterable[int]) -> None:
    """Tell every listener that these item stages of ``stage`` got a new answer (after commit)."""
    ids = list(item_stage_ids)
    if not ids:
        return
    for listener in list(_stored_listeners):
        try:
            listener(stage, ids)
        except Exception:
            logger.exception("listener %r failed for stored answers on %s", listener, ids[:10])


# -- Project events: what happened in a project, for subscribers outside the process ----------
#
# The engine and the apps announce milestones of a project (an import finished, a release
# published, ...) with ``project_event(kind, project_id=..., data=...)``, *inside* the
# transaction of the work they report (or just after it, where the work has no transaction of
# its own), so a subscriber's own rows — the webhooks app's outbox — commit with the work or not
# at all. A subscriber registers with ``on_project_event(listener)`` (or
# ``Plugin.on_project_event``); it must be quick (write a row, never call out) and act after
# commit for anything slow. Each listener runs in a savepoint: one that raises is logged and
# rolled back to it, and never undoes the work it hears about.
#
# ``data`` is JSON: ids, slugs, counts and statuses only — never answers, gold or people's
# names, because a subscriber may send it off-site. Item-level events carry ``data["item"]``
# with the item's ``id``: subscribers keep one item's events in the order they were announced.

#: The kinds of project event, with what each means (the webhooks app offers these to subscribe
#: to and documents their bodies; a new kind is added here first).
PROJECT_EVENT_KINDS: dict[str, str] = {
    "import.finished": "An import batch finished: succeeded or failed, with its counts.",
    "item_stage.decided": "An item's stage was decided (by its policy or by a person).",
    "item.needs_adjudication": "An item's stage waits for a reviewer's decision.",
    "stage.completed": "Every item in a stage is decided or discarded.",
    "release.published": "A release was built and published.",
    "crowd.participant_completed": "A crowd participant met their quota.",
    "crowd.participant_screened_out": "A crowd participant was screened out.",
    "model_run.finished": "A model run (a model rater's or a generation run) is done.",
}

ProjectEventListener = Callable[[str, int, dict[str, Any]], None]
_project_event_listeners: list[ProjectEventListener] = []


def on_project_event(listener: ProjectEventListener) -> ProjectEventListener:
    """Call ``listener(kind, project_id, data)`` for every project event (see the block's
    comment). Registering the same function twice keeps one registration."""
    if listener not in _project_event_listeners:
        _project_event_listeners.append(listener)
    return listener


def project_event(kind: str, *, project_id: int, data: dict[str, Any]) -> None:
    """Announce a project event of ``kind`` (one of ``PROJECT_EVENT_KINDS``; ValueError for
    another) to every listener, each in a savepoint of the caller's transaction; a listener's
    failure is logged and rolled back, never raised."""
    from django.db import transaction

    if kind not in PROJECT_EVENT_KINDS:
        raise ValueError(f"unknown project event kind {kind!r}")
    for listener in list(_project_event_listeners):
        try:
            with transaction.atomic():
                listener(kind, project_id, data)
        except Exception:
            logger.exception("listener %r failed for %s in project %s", listener, kind, project_id)

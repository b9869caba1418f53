"""Resolution messages from the submit path, batched: when a submit fills an item stage, its id
joins a per-process buffer after commit, and one Celery message
(annotation.tasks.resolve_item_stages) carries every id gathered in a short window or up to a
batch size, instead of one message per item stage.

Why: a publish costs the web process about 0.9 ms of CPU (kombu builds a Redis client object
for each; benchmarks/README.md, "Annotator loop"), paid on every item stage that completes;
one publish per batch pays it once for many.

Nothing is lost that was not already at risk: the submission itself is in PostgreSQL before its
id enters the buffer (on commit), and the item stage waits in the RESOLVING state, which the beat
sweep (annotation.tasks.sweep_unresolved) resolves once it is older than SWEEP_GRACE_SECONDS.
So a buffer lost with its process (killed before its window ended), or a batch the broker refused
(Redis down: logged, not raised), delays those resolutions until the sweep, as a lost single
message always did.

Settings (rungwise/settings.py): RESOLVE_PUBLISH_WINDOW_SECONDS (0 turns batching off: one
message per item stage as before) and RESOLVE_PUBLISH_BATCH (a full buffer is sent at once, by
the request that filled it). With no broker (CELERY_TASK_ALWAYS_EAGER: tasks run in-process) the
single message is kept, so in-process runs resolve as soon as the submit commits. The caller
(annotation.services.submit) asks batching() and sends the single message itself otherwise.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from kombu.exceptions import OperationalError as BrokerUnavailable

logger = logging.getLogger(__name__)


class ResolutionBuffer:
    """Item stage ids waiting for their resolution message, sent in batches by ``send`` (a
    callable taking a list of ids): when ``size`` ids are waiting (by the caller that added the
    last one), else ``window`` seconds after the first one arrived (by a flusher thread started
    on first use). Thread-safe; a forked child starts empty (the ids were its parent's to send)."""

    def __init__(self, send: Callable[[list[int]], None], *, window: float, size: int) -> None:
        self.send, self.window, self.size = send, window, max(1, size)
        self._reset()

    def _reset(self) -> None:
        self._ids: list[int] = []
        self._since = 0.0
        self._condition = threading.Condition()
        self._flusher: threading.Thread | None = None

    def add(self, item_stage_id: int) -> None:
        """Queue one id; send the batch now if it is full."""
        with self._condition:
            if self._flusher is None:
                self._flusher = threading.Thread(
                    target=self._run, name="resolution-publish", daemon=True
                )
                self._flusher.start()
            if not self._ids:
                self._since = time.monotonic()
            self._ids.append(item_stage_id)
            batch = self._take() if len(self._ids) >= self.size else []
            if not batch:
                self._condition.notify()
        if batch:
            self.send(batch)

    def flush(self) -> None:
        """Send whatever is waiting (at exit, and for tests)."""
        with self._condition:
            batch = self._take()
        if batch:
            self.send(batch)

    def pending(self) -> list[int]:
        with self._condition:
            return list(self._ids)

    def _take(self) -> list[int]:
        batch, self._ids = self._ids, []
        return batch

    def _run(self) -> None:
        while True:
            with self._condition:
                while True:
                    if not self._ids:
                        self._condition.wait()
                        continue
                    remaining = self._since + self.window - time.monotonic()
                    if remaining <= 0:
                        break
                    self._condition.wait(remaining)
                batch = self._take()
            try:
                self.send(batch)
            except Exception:  # the thread must outlive a failed send: the sweep has those ids
                logger.exception("could not send the resolution of item stages %r", batch)


def _send(item_stage_ids: list[int]) -> None:
    """Publish one resolve message for ``item_stage_ids``. A broker outage is logged, never
    raised: the ids' item stages stay RESOLVING and the sweep resolves them."""
    from annotation.tasks import resolve_item_stages

    try:
        resolve_item_stages.delay(item_stage_ids)
    except BrokerUnavailable as error:
        logger.warning(
            "could not enqueue the resolution of %d item stages: the broker is unavailable "
            "(%s); the sweep will resolve them", len(item_stage_ids), error,
        )  # fmt: skip
    except Exception:
        logger.exception(
            "could not enqueue the resolution of item stages %r; the sweep will resolve them",
            item_stage_ids,
        )


_buffer: ResolutionBuffer | None = None
_buffer_lock = threading.Lock()


def resolution_buffer() -> ResolutionBuffer:
    """This process's buffer (made on first use from the settings)."""
    global _buffer
    if _buffer is None:
        with _buffer_lock:
            if _buffer is None:
                _buffer = ResolutionBuffer(
                    _send,
                    window=settings.RESOLVE_PUBLISH_WINDOW_SECONDS,
                    size=settings.RESOLVE_PUBLISH_BATCH,
                )
                atexit.register(_buffer.flush)
                # A child forked after this (a prefork worker, a forking server) starts empty.
                os.register_at_fork(after_in_child=_forget_in_child)
    return _buffer


def _forget_in_child() -> None:
    """A forked process neither owns its parent's flusher thread nor its waiting ids."""
    global _buffer, _buffer_lock
    _buffer_lock = threading.Lock()
    if _buffer is not None:
        _buffer._reset()


def batching() -> bool:
    """Whether resolution messages are batched in this process: a window is set and tasks go to
    a broker (not run in-process, CELERY_TASK_ALWAYS_EAGER or the app's own flag)."""
    from celery import current_app

    return settings.RESOLVE_PUBLISH_WINDOW_SECONDS > 0 and not (
        settings.CELERY_TASK_ALWAYS_EAGER or current_app.conf.task_always_eager
    )


def resolution_batch_on_commit(item_stage_id: int) -> None:
    """After the current transaction commits (at once outside one), queue the completed item
    stage ``item_stage_id`` in this process's buffer for the next batched resolve message."""
    buffer = resolution_buffer()
    transaction.on_commit(lambda: buffer.add(item_stage_id))

"""The life cycle of a background job stored as a row: claim, sweep of stuck jobs, requeue, give up.

Import batches (``imports.services.jobs``) and release builds (``releases.services.jobs``) are
both rows a Celery task works on, and both can be lost the same two ways: the task's message
never arrives (the broker was down or restarted empty), or the worker running it dies. One
state machine, written here once, covers both:

* **queued** — waiting for a worker (``JobLifecycle.queued``: an import ``pending``, a release
  ``building`` that no attempt has started);
* **running** — an attempt claimed it at ``started_at`` (``JobLifecycle.running``);
* **finished** — ``JobLifecycle.finished`` statuses; nothing here changes a finished job except
  an admin's retry, which each app allows or refuses (``JobLifecycle.retry_refusal``).

``claim`` moves a queued job, or a running one whose attempt is older than ``stale_after``
(beyond Celery's hard time limit, so never a live attempt), to running under the job's row lock
and counts the attempt; it returns None when the job is not the caller's to run, which is what
makes the tasks safe to run twice. ``stuck`` lists the jobs the beat sweep sends again: queued
for longer than the grace period, or running for longer than ``stale_after``. ``requeue`` sends
one again after commit, or — after ``max_attempts`` started attempts — ends it with the app's
reason. ``mark_failed`` is an admin's decision to end an unfinished job.

The app supplies what differs (its statuses, the fields a claim resets, how it fails a job and
what it refuses) by subclassing ``JobLifecycle``; the state conditions are ``Q`` objects, so the
claim and the sweep are each one statement with the conditions in its ``WHERE`` (the ORM says
them; no hand-written SQL is needed).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, ClassVar, Generic, TypeVar

from django.conf import settings
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from annotation.errors import ApplicationError
from annotation.services.common import enqueue_on_commit

#: A job attempt that started this long ago and has not finished was abandoned by a dead worker:
#: beyond Celery's hard time limit, so never a live attempt.
STALE_AFTER = timedelta(seconds=getattr(settings, "CELERY_TASK_TIME_LIMIT", 900) + 60)
#: Attempts started for one job before the sweep gives up and ends it with a reason.
MAX_ATTEMPTS = 3


JobT = TypeVar("JobT", bound=models.Model)


class JobLifecycle(Generic[JobT]):
    """The life cycle of the rows of ``model`` (see the module docstring).

    Subclasses set ``model`` and ``finished`` and implement ``task``, ``queued``, ``running``,
    ``fail``, ``gave_up_message`` and ``reset_fields``; ``claim_fields`` and ``retry_refusal``
    have defaults. The model has ``status``, ``attempts``, ``started_at``, ``created_at`` and
    ``message`` fields.
    """

    model: type[JobT]
    finished: ClassVar[tuple[str, ...]]
    related: ClassVar[tuple[str, ...]] = ()
    max_attempts: ClassVar[int] = MAX_ATTEMPTS
    stale_after: ClassVar[timedelta] = STALE_AFTER

    # --- what the app says ----------------------------------------------------------------

    def task(self) -> Any:
        """The Celery task that runs one job, called with the job's id (imported here, not at
        the top of the app's module: tasks import services)."""
        raise NotImplementedError

    def queued(self) -> Q:
        """Jobs waiting for a worker."""
        raise NotImplementedError

    def running(self) -> Q:
        """Jobs an attempt has claimed (and has not finished)."""
        raise NotImplementedError

    def claim_fields(self) -> Mapping[str, Any]:
        """What a claim sets besides ``started_at`` and ``attempts`` (a status, progress reset)."""
        return {}

    def fail(self, job: JobT, message: str) -> JobT:
        """End ``job`` as failed with ``message`` (the caller holds its row lock)."""
        raise NotImplementedError

    def gave_up_message(self, job: JobT) -> str:
        """The reason a job started ``max_attempts`` times and never finished is ended with."""
        raise NotImplementedError

    def retry_refusal(self, job: JobT, *, reset_attempts: bool) -> ApplicationError | None:
        """Why ``job`` may not be sent again (an admin's retry when ``reset_attempts``), or
        None. Called under the job's row lock."""
        return None

    def reset_fields(self, job: JobT, now: datetime) -> Mapping[str, Any]:
        """What an admin's retry sets besides ``attempts``, ``started_at`` and ``message``: the
        job goes back to queued."""
        raise NotImplementedError

    # --- the state machine ----------------------------------------------------------------

    def claimable(self, now: datetime) -> Q:
        """Queued, or running with an attempt that started before ``now - stale_after`` (or
        never recorded its start): the jobs an attempt may take."""
        abandoned = Q(started_at__isnull=True) | Q(started_at__lt=now - self.stale_after)
        return self.queued() | (self.running() & abandoned)

    def claim(self, pk: Any) -> JobT | None:
        """Start an attempt of job ``pk`` if it is claimable (``claimable``), under its row
        lock: ``started_at`` now, one more attempt, ``claim_fields`` set. None when the job does
        not exist or is not the caller's to run (finished, or a live attempt has it)."""
        now = timezone.now()
        with transaction.atomic():
            job = (
                self.model._default_manager.select_for_update(of=("self",))
                .select_related(*self.related)
                .filter(self.claimable(now), pk=pk)
                .first()
            )
            if job is None:
                return None
            row: Any = job
            fields = {"started_at": now, "attempts": row.attempts + 1, **self.claim_fields()}
            for name, value in fields.items():
                setattr(job, name, value)
            job.save(update_fields=list(fields))
            return job

    def stuck(
        self, *, now: datetime | None = None, grace_seconds: float | None = None
    ) -> list[Any]:
        """The ids of jobs the beat sweep sends again: queued since before ``now -
        grace_seconds`` (the message was lost; ``settings.SWEEP_GRACE_SECONDS`` by default) or
        running since before ``now - stale_after`` (the worker died)."""
        now = now or timezone.now()
        grace = timedelta(
            seconds=settings.SWEEP_GRACE_SECONDS if grace_seconds is None else grace_seconds
        )
        return list(
            self.model._default_manager.filter(
                (self.queued() & Q(created_at__lt=now - grace))
                | (self.running() & Q(started_at__lt=now - self.stale_after))
            ).values_list("pk", flat=True)
        )

    def is_live(self, job: JobT, now: datetime | None = None) -> bool:
        """An attempt started less than ``stale_after`` ago and may still be running."""
        started: datetime | None = getattr(job, "started_at", None)
        return started is not None and started >= (now or timezone.now()) - self.stale_after

    def requeue(self, pk: Any, *, reset_attempts: bool = False) -> JobT:
        """Send job ``pk`` again after commit, or end it (``fail`` with ``gave_up_message``)
        after ``max_attempts`` started attempts; a finished job is returned as it is. With
        ``reset_attempts`` (an admin's retry) the job goes back to queued with a fresh count,
        unless ``retry_refusal`` says why not."""
        with transaction.atomic():
            job = self.model._default_manager.select_for_update().get(pk=pk)
            row: Any = job
            refusal = self.retry_refusal(job, reset_attempts=reset_attempts)
            if refusal is not None:
                raise refusal
            if reset_attempts:
                fields = {
                    **self.reset_fields(job, timezone.now()),
                    "attempts": 0,
                    "started_at": None,
                    "message": "",
                }
                for name, value in fields.items():
                    setattr(job, name, value)
                job.save(update_fields=list(fields))
            elif row.status in self.finished:
                return job
            elif row.attempts >= self.max_attempts:
                return self.fail(job, self.gave_up_message(job))
            enqueue_on_commit(self.task(), job.pk)
        return job

    def mark_failed(self, pk: Any, *, reason: str) -> JobT:
        """An admin's decision: an unfinished job ends here with their reason (2,000
        characters at most); a finished one is returned as it is."""
        with transaction.atomic():
            job = self.model._default_manager.select_for_update().get(pk=pk)
            row: Any = job
            if row.status in self.finished:
                return job
            return self.fail(job, reason[:2000])

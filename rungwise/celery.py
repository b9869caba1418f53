"""The Celery application. Broker and behaviour come from Django settings (CELERY_* names);
without a broker, tasks sent by a request run after it, in the in-process worker, at their
countdown (OffTheRequestTask)."""

import functools
import os
from datetime import UTC, datetime
from typing import Any

import redis
from celery import Celery, Task
from celery.utils import uuid
from kombu.transport import redis as kombu_redis

from rungwise import inprocess

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")


class OffTheRequestTask(Task):
    """Every task of the app. With a broker it is Celery's own. Without one (tasks eager, the
    embedded default) a task sent while a request is served runs after it, in this process's
    background worker (a process of its own, or a thread: rungwise/inprocess.py), never inside
    the request that sent it, and no sooner than its countdown or ETA."""

    def apply_async(
        self,
        args: Any = None,
        kwargs: Any = None,
        task_id: str | None = None,
        *further: Any,
        **options: Any,
    ) -> Any:
        if self.app.conf.task_always_eager and inprocess.should_defer():
            task_id = task_id or uuid()
            run = functools.partial(super().apply_async, args, kwargs, task_id, *further, **options)
            # The call by name, for the worker process (None if it is not JSON: then `run`, in
            # the worker thread).
            call = None if further else inprocess.TaskCall.of(self.name, args, kwargs, options)
            # As a worker would: not before its countdown / ETA, and one run for the same call
            # sent again while it waits (the apps' debounce relies on both). Arguments as JSON
            # has them when it can, so that a call sent back by the worker process (tuples
            # arrive as lists) meets the same call sent here.
            key = (
                (self.name, repr(call.args), repr(sorted(call.kwargs.items())))
                if call is not None
                else (self.name, repr(args), repr(sorted((kwargs or {}).items())))
            )
            inprocess.submit(run, delay=_delay(options), key=key, call=call)
            return self.AsyncResult(task_id)
        return super().apply_async(args, kwargs, task_id, *further, **options)


def _delay(options: dict[str, Any]) -> float:
    """Seconds until a task sent with these options may run: its ``countdown``, or its ``eta``
    (a datetime or an ISO 8601 string; naive means UTC, as Celery reads it), else 0."""
    if options.get("countdown") is not None:
        return float(options["countdown"])
    eta = options.get("eta")
    if eta is None:
        return 0.0
    if isinstance(eta, str):
        eta = datetime.fromisoformat(eta)
    if eta.tzinfo is None:
        eta = eta.replace(tzinfo=UTC)
    return (eta - datetime.now(UTC)).total_seconds()


app = Celery("rungwise", task_cls=OffTheRequestTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


class _RedisQoS(kombu_redis.QoS):
    """Celery 5.7 / kombu 5.7 workaround: when the broker connection is lost, the worker's
    consumer collects the connection (detaching its transport) and then closes it again; closing
    the channel tries to push the messages the worker holds unacknowledged (acks_late tasks,
    countdown tasks waiting for their time) back to Redis through the detached transport, and
    the AttributeError this raises stops the worker ("Unrecoverable error: 'NoneType' object has
    no attribute 'hostname'"). Any countdown task pending during a Redis outage triggered it.
    Here the restore is skipped when the transport is gone: the messages stay in Redis's unacked
    set and come back after the visibility timeout, as after a killed worker, and the worker
    reconnects when Redis returns (tests/annotation/test_workers.py exercises it)."""

    def restore_unacked(self, client=None):
        transport = getattr(self.channel, "connection", None)
        if client is None and (transport is None or transport.client is None):
            self._delivered.clear()
            return None
        return super().restore_unacked(client)


kombu_redis.Channel.QoS = _RedisQoS


_connparams = kombu_redis.Channel._connparams


def _connparams_of_a_live_channel(self, asynchronous=False):
    """kombu 5.7 workaround: a closed channel is detached from its transport
    (``channel.connection = None``, kombu.transport.virtual.Transport.close_channel) and its
    connection pool is dropped. The worker's consumer closes its channels when the broker
    connection is lost; anything that still reaches Redis through one of them afterwards (an
    acknowledgement or restore of a message it delivered, a publish) rebuilt the pool here from
    ``self.connection.client`` and raised AttributeError ("'NoneType' object has no attribute
    'client'"), which kombu and Celery do not treat as a connection error, so the worker
    stopped. Raised as what it is, a lost broker connection, the usual recovery applies
    (tests/test_celery.py)."""
    transport = self.connection
    if transport is None or transport.client is None:
        raise redis.exceptions.ConnectionError(
            "this broker channel was closed when its connection was lost"
        )
    return _connparams(self, asynchronous=asynchronous)


kombu_redis.Channel._connparams = _connparams_of_a_live_channel

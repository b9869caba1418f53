"""The Celery application. Broker and behaviour come from Django settings (CELERY_* names)."""

import os

from celery import Celery
from kombu.transport import redis as kombu_redis

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rungwise.settings")

app = Celery("rungwise")
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

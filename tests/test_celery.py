"""The Celery worker and Redis going away (rungwise/celery.py's kombu 5.7 workarounds): the
worker as deployed survives a Redis restart while it runs a task, and a channel whose
connection was lost answers with a connection error, which kombu and Celery recover from,
not with an AttributeError, which stopped the worker. Each test has a Redis of its own."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import pytest

from tests import processes

pytestmark = pytest.mark.celery_worker


@pytest.fixture
def redis():
    reason = processes.servers_available()
    if reason:
        pytest.skip(reason)
    server = processes.Redis(Path(tempfile.mkdtemp(prefix="rungwise-redis-"))).start()
    yield server
    if server.answers():
        server.shutdown()
    shutil.rmtree(server.directory, ignore_errors=True)


def test_the_worker_survives_a_redis_restart_while_a_task_runs(redis, tmp_path):
    """As deployed (prefork, gossip and mingle on): a task running while Redis goes away and
    comes back empty finishes, the worker reconnects and takes new work."""
    env = processes.process_env(CELERY_BROKER_URL=redis.url(), SQLITE_PATH=str(tmp_path / "db"))
    env.pop("DATABASE_URL", None)
    log = tmp_path / "worker.log"
    name = f"celerytest-{time.monotonic_ns()}@%h"
    worker = processes.start_worker(env, name, pool="prefork", concurrency=1, log=log,
                                    include="tests.celery_tasks", quiet=False)  # fmt: skip
    try:
        with processes.broker_client(redis.url()) as client:
            marker = str(tmp_path / "task")
            client.send_task("tests.celery_tasks.sleep", args=[6, marker])
            processes.wait_until(lambda: Path(marker + ".started").exists(), timeout=20,
                                 what="the task started")  # fmt: skip
        redis.shutdown()
        time.sleep(2)  # the worker notices and closes its connection
        redis.start()  # empty
        processes.wait_until(lambda: Path(marker + ".done").exists(), timeout=20,
                             what="the task finished")  # fmt: skip
        time.sleep(3)  # its acknowledgement
        assert worker.poll() is None, log.read_text()[-3000:]
        processes.wait_for_worker(worker, name, redis.url(), timeout=30)
        # ...and it still takes work.
        with processes.broker_client(redis.url()) as client:
            client.send_task("tests.celery_tasks.sleep", args=[0, marker + "2"])
        processes.wait_until(lambda: Path(marker + "2.done").exists(), timeout=30,
                             what="a task after the restart")  # fmt: skip
        assert "Unrecoverable error" not in log.read_text()
    finally:
        processes.stop(worker)


def test_a_channel_whose_connection_was_lost_raises_a_connection_error(redis):
    """kombu 5.7.0 (celery 5.7.0): when the worker's consumer loses the broker it closes its
    channels, and closing detaches a channel from its transport (``channel.connection = None``)
    and drops its connection pool. Whatever then still reaches Redis through that channel (an
    acknowledgement or a restore of a message it delivered, a publish) rebuilds the pool from
    ``self.connection.client`` and raised AttributeError ("'NoneType' object has no attribute
    'client'"), which neither kombu nor Celery count as a connection error: the worker died
    (the "hostname" variant, through a detached transport, is the QoS workaround). With the
    workaround it is a redis ConnectionError, the error a lost broker raises anyway."""
    import redis as redis_py
    from kombu import Connection

    import rungwise.celery  # noqa: F401  (installs the workarounds)

    connection = Connection(redis.url())
    channel = connection.channel()
    channel.client.ping()
    channel.close()  # what the consumer does with the channels of a lost connection
    assert channel.connection is None
    with pytest.raises(redis_py.exceptions.ConnectionError):
        channel.qos.ack("a-delivery-tag")
    with pytest.raises(redis_py.exceptions.ConnectionError):
        channel._put("celery", {"body": "x"})
    assert "ConnectionError" in [
        error.__name__ for error in connection.connection_errors
    ]  # what kombu and Celery recover from
    connection.release()

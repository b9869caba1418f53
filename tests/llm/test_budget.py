"""The shared rate budget (llm/budget.py): requests and tokens per rolling minute, in Redis for
every worker, in-process without Redis."""

from __future__ import annotations

import threading
import uuid

import pytest

from llm import budget


@pytest.fixture(params=["redis", "local"])
def where(request, settings):
    if request.param == "redis":
        if not settings.CELERY_BROKER_URL.startswith("redis://"):
            pytest.skip("needs Redis: run through `make test` (scripts/with-services.sh)")
    else:
        settings.LLM_REDIS_URL = ""
        settings.CELERY_BROKER_URL = "memory://"
    return request.param


def test_requests_per_minute_are_granted_up_to_the_limit_then_a_wait_is_named(where):
    name = f"rpm-{uuid.uuid4().hex}"
    granted = [budget.acquire(name, rpm=5, tpm=0, tokens=10) for _ in range(5)]
    assert granted == [0.0] * 5
    wait = budget.acquire(name, rpm=5, tpm=0, tokens=10)
    assert 59 < wait <= 60.01


def test_tokens_per_minute_count_the_estimates_and_an_oversized_request_waits_for_all(where):
    name = f"tpm-{uuid.uuid4().hex}"
    assert budget.acquire(name, rpm=0, tpm=100, tokens=60) == 0.0
    assert budget.acquire(name, rpm=0, tpm=100, tokens=40) == 0.0
    assert budget.acquire(name, rpm=0, tpm=100, tokens=1) > 59
    other = f"tpm-big-{uuid.uuid4().hex}"
    assert budget.acquire(other, rpm=0, tpm=100, tokens=10_000) == 0.0  # capped to the budget
    assert budget.acquire(other, rpm=0, tpm=100, tokens=1) > 59


def test_no_limit_costs_nothing(where):
    assert budget.acquire("free", rpm=0, tpm=0, tokens=10**9) == 0.0


def test_many_workers_at_once_never_take_more_than_the_limit(where):
    """32 threads (each its own Redis round trip) race for 10 requests: exactly 10 win."""
    name = f"race-{uuid.uuid4().hex}"
    results: list[float] = []
    lock = threading.Lock()

    def ask() -> None:
        wait = budget.acquire(name, rpm=10, tpm=0, tokens=1)
        with lock:
            results.append(wait)

    threads = [threading.Thread(target=ask) for _ in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(1 for wait in results if wait == 0.0) == 10

"""Annotators racing on threads, for the PostgreSQL race tests (tests/annotation/test_concurrency.py,
test_gold_race.py, test_adaptive_concurrency.py): each thread uses its own database connection and
closes it, and the first error any thread raised fails the test."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connection, connections


def run_annotators(
    loop: Callable[[Any, int], None], people: Sequence[Any], *, timeout: float = 300
) -> None:
    """Run ``loop(person, index)`` for every person on a thread of its own, all at once; assert
    that none hung past ``timeout`` seconds and none raised (the first errors are shown)."""
    errors: list[BaseException] = []

    def run(person: Any, index: int) -> None:
        try:
            loop(person, index)
        except BaseException as error:  # surfaced below with the thread's failure
            errors.append(error)
        finally:
            connection.close()

    threads = [
        threading.Thread(target=run, args=(person, index)) for index, person in enumerate(people)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    assert not any(thread.is_alive() for thread in threads), "an annotator thread hung"
    assert not errors, errors[:3]
    connections.close_all()

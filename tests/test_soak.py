"""The soak with faults (benchmarks/soak.py), short: a minute of simulated annotators over HTTP
on gunicorn, a prefork Celery worker, beat, and PostgreSQL and Redis of its own, while the
worker is SIGKILLed, Redis is stopped and comes back empty (a release is published and an
import started meanwhile) and PostgreSQL restarts. Every invariant the script checks must hold:
no over-assigned slot, no duplicate annotation, every acknowledged submit stored, nothing left
unresolved or stuck, counters equal to a recount, every process alive."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests import processes

pytestmark = [pytest.mark.postgres, pytest.mark.celery_worker]


def test_a_short_soak_with_faults_keeps_every_invariant():
    reason = processes.servers_available()
    if reason:
        pytest.skip(reason)
    result = subprocess.run(
        [sys.executable, "benchmarks/soak.py", "--seconds", "45", "--annotators", "12",
         "--web-workers", "2", "--threads", "2"],
        cwd=processes.REPO,
        env=processes.process_env(),
        capture_output=True,
        text=True,
        timeout=240,
    )  # fmt: skip
    print(result.stdout)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "FAIL" not in result.stdout
    for invariant in ("over-assigned slots: 0", "duplicate annotations: 0",
                      "acknowledged submits missing: 0", "releases stuck: 0",
                      "counters differ from a recount: 0", "processes that died: 0"):  # fmt: skip
        assert f"ok   {invariant}" in result.stdout
    assert "published during the outage (queued)" in result.stdout

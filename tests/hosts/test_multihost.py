"""Several hosts on one machine (benchmarks/multihost.py, tests/netns.py), short: network
namespaces as hosts, HAProxy in front of two web hosts, a worker host and a database host, while
a web host is killed, the worker is SIGKILLed and Redis comes back empty. Every soak invariant
holds, a release built on the worker downloads identically through each web host, and nothing
the run made (namespaces, interfaces, processes, data directory) is left behind.

Skipped, with the reason, where namespaces cannot be made (not root, no iproute2, a container
that refuses them) or HAProxy is not installed."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import netns, processes

pytestmark = [pytest.mark.postgres, pytest.mark.celery_worker]


def _skip_unless_possible(*programs: str) -> None:
    reason = netns.unavailable(programs=programs) or processes.servers_available()
    if reason:
        pytest.skip(reason)


def _ours() -> set[str]:
    """Namespaces and interfaces named like the ones tests/netns.py makes."""
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    names = re.findall(r"^\d+: ([^:@]+)", links, flags=re.MULTILINE)
    return {name for name in [*netns.namespaces(), *names] if name.startswith(netns.PREFIX)}


def test_hosts_reach_each_other_and_are_removed_with_their_processes():
    _skip_unless_possible()
    before = _ours()
    with netns.Network() as network:
        network.add("one", 2)
        network.add("two", 3)
        server = subprocess.Popen(
            network.command("two", sys.executable, "-m", "http.server", "8000", "--bind",
                            network.hosts["two"].address),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        fetch = [sys.executable, "-c", "import sys, urllib.request; "
                 "print(urllib.request.urlopen(sys.argv[1], timeout=5).status)",
                 f"http://{network.hosts['two'].address}:8000/"]  # fmt: skip

        def answered() -> bool:
            result = subprocess.run(network.command("one", *fetch), capture_output=True, text=True)
            return result.stdout.strip() == "200"

        processes.wait_until(answered, timeout=60, interval=0.5, what="host one reaching two")
        # The server is on "two" only: its port is not open on "one".
        assert netns.pids(network.hosts["two"].namespace) == [server.pid]
        assert netns.pids(network.hosts["one"].namespace) == []
        assert network.kill("two") == 1
        assert server.wait(timeout=10) == -signal.SIGKILL
        survivor = subprocess.Popen(network.command("one", "sleep", "600"))
    # Leaving the block killed what was still running on a host and removed everything.
    assert survivor.wait(timeout=10) == -signal.SIGKILL
    assert _ours() == before


@pytest.mark.timeout(900)
def test_a_short_multihost_run_under_faults_keeps_every_invariant():
    _skip_unless_possible("haproxy")
    before = _ours()
    process = subprocess.Popen(
        [sys.executable, "benchmarks/multihost.py", "--seconds", "40", "--annotators", "12",
         "--web-workers", "1", "--threads", "2", "--concurrency", "1"],
        cwd=processes.REPO, env=processes.process_env(), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        output, _ = process.communicate(timeout=840)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)  # the script removes what it made, then exits
        output, _ = process.communicate(timeout=60)
        pytest.fail("the run did not finish within 14 minutes:\n" + output[-6000:])
    print(output)
    assert process.returncode == 0, output[-6000:]
    assert "FAIL" not in output
    for invariant in ("over-assigned slots: 0", "duplicate annotations: 0",
                      "acknowledged submits missing: 0", "releases stuck: 0",
                      "imports stuck or failed: 0", "counters differ from a recount: 0",
                      "processes that died: 0",
                      "release downloads through a web host that failed or differ: 0",
                      "web hosts the balancer does not see up: 0"):  # fmt: skip
        assert f"ok   {invariant}" in output
    assert "uploaded through web1: pending" in output and "→ succeeded" in output
    assert "the balancer marked it DOWN" in output
    assert "downloaded through web1" in output and "downloaded through web2" in output
    if "files: the object store" in output:  # each host its own disk: the store is the one place
        assert "ok   files in the object store" in output
    data = re.search(r"data in (\S+)", output)
    assert data and not Path(data.group(1)).exists()
    deadline = time.monotonic() + 10
    while _ours() != before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _ours() == before

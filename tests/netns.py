"""Hosts on one machine: Linux network namespaces joined by veth pairs to a bridge, each with
its own address on a private /24 (benchmarks/multihost.py, tests/hosts/test_multihost.py).

A namespace has its own interfaces, addresses, ports and routes, so a process started in one
(``Network.command(host, ...)``) listens and connects as if on a host of its own; the file
system and users are shared. The bridge has the subnet's ``.1`` in the root namespace, so this
process reaches every host. ``Network.remove`` kills every process left in the namespaces
and deletes them, their veths and the bridge; every name starts with ``rwmh`` and the run's tag,
so ``remove_leftovers`` also clears what a killed run left. Needs root (``ip netns``).

Nothing here imports Django.
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass

PREFIX = "rwmh"
LOCK = "/tmp/rungwise-netns.lock"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and result.returncode:
        raise RuntimeError(f"ip {' '.join(args)}: {result.stderr.strip()}")
    return result


def unavailable(*, programs: tuple[str, ...] = ()) -> str | None:
    """None when namespaces can be made here (and ``programs`` are installed), else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is not installed"
    for program in programs:
        if shutil.which(program) is None:
            return f"{program} is not installed (Debian: apt-get install {program})"
    probe = f"{PREFIX}probe{os.getpid() % 100000}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode:
        return f"this machine refuses network namespaces: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    bridge = f"{PREFIX}pb{os.getpid() % 100000}"
    made = _ip("link", "add", bridge, "type", "bridge", check=False)
    if made.returncode:
        return f"this machine refuses a bridge interface: {made.stderr.strip()}"
    _ip("link", "del", bridge, check=False)
    return None


def free_subnet(first: str = "10.77.0") -> str:
    """``first`` (three octets) when no interface here has an address in it, else the next
    free 10.77.x: two runs at once (or a leftover) never share a bridge's subnet."""
    used = _ip("-4", "-o", "addr", "show").stdout
    base = ipaddress.ip_network(f"{first}.0/24")
    for step in range(0, 250):
        network = ipaddress.ip_network((int(base.network_address) + 256 * step, 24))
        prefix = str(network.network_address).rsplit(".", 1)[0]
        if f" {prefix}." not in used:
            return prefix
    raise RuntimeError(f"no free /24 from {first}.0")


def namespaces() -> list[str]:
    return [line.split()[0] for line in _ip("netns", "list").stdout.splitlines() if line.strip()]


def pids(namespace: str) -> list[int]:
    """Every process whose network namespace is ``namespace``."""
    result = _ip("netns", "pids", namespace, check=False)
    return [int(pid) for pid in result.stdout.split() if pid.isdigit()]


def kill_namespace_processes(namespace: str, timeout: float = 10) -> int:
    """SIGKILL every process in ``namespace`` (what a host losing power does to them); returns
    how many there were, once they are gone."""
    found = pids(namespace)
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while pids(namespace) and time.monotonic() < deadline:
        time.sleep(0.05)
    return len(found)


def remove_leftovers(tag: str = "") -> list[str]:
    """Delete the namespaces, veths and bridges named ``PREFIX + tag``… (their processes
    killed first); returns what was removed."""
    removed = []
    start = PREFIX + tag
    for namespace in namespaces():
        if namespace.startswith(start):
            kill_namespace_processes(namespace)
            _ip("netns", "del", namespace, check=False)
            removed.append(namespace)
    links = _ip("-o", "link", "show").stdout
    for name in re.findall(r"^\d+: ([^:@]+)", links, flags=re.MULTILINE):
        if name.startswith(start):
            _ip("link", "del", name, check=False)
            removed.append(name)
    return removed


@dataclass
class Host:
    name: str
    namespace: str
    address: str


class Network:
    """A bridge with namespaces on it. Use as a context manager (or call ``remove``): on the
    way out, whatever happened, every process in the namespaces is killed and every interface
    and namespace this object made is deleted."""

    def __init__(self, subnet: str | None = None):
        self.tag = uuid.uuid4().hex[:4]
        self.bridge = f"{PREFIX}{self.tag}br"
        self.hosts: dict[str, Host] = {}
        # Two runs starting at once must not both find the same subnet free.
        with open(LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self.subnet = subnet or free_subnet()
            self.gateway = f"{self.subnet}.1"
            _ip("link", "add", self.bridge, "type", "bridge")
            try:
                _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
                _ip("link", "set", self.bridge, "up")
            except RuntimeError:
                _ip("link", "del", self.bridge, check=False)
                raise

    def add(self, name: str, octet: int) -> Host:
        """A host ``name`` (at most 6 characters: interface names are short) at
        ``subnet.octet``, with its loopback up and a route to the bridge."""
        if len(name) > 6 or not name.isalnum():
            raise ValueError(f"host name {name!r}: at most 6 letters or digits")
        namespace = f"{PREFIX}{self.tag}-{name}"
        outside = f"{PREFIX}{self.tag}{name}"
        address = f"{self.subnet}.{octet}"
        _ip("netns", "add", namespace)
        host = Host(name, namespace, address)
        self.hosts[name] = host
        _ip("link", "add", outside, "type", "veth", "peer", "name", "eth0", "netns", namespace)
        _ip("link", "set", outside, "master", self.bridge)
        _ip("link", "set", outside, "up")
        inside = ["-n", namespace]
        _ip(*inside, "addr", "add", f"{address}/24", "dev", "eth0")
        _ip(*inside, "link", "set", "eth0", "up")
        _ip(*inside, "link", "set", "lo", "up")
        _ip(*inside, "route", "add", "default", "via", self.gateway)
        return host

    def command(self, host: str, *argv: str) -> list[str]:
        """``argv`` run inside ``host``'s namespace (``ip netns exec`` execs it: the process
        started is ``argv`` itself, with its own pid and process group)."""
        return ["ip", "netns", "exec", self.hosts[host].namespace, *argv]

    def kill(self, host: str) -> int:
        """SIGKILL every process on ``host``; returns how many."""
        return kill_namespace_processes(self.hosts[host].namespace)

    def cpu_seconds(self, host: str) -> float:
        """User + system CPU of the processes now on ``host`` (from /proc)."""
        total = 0
        for pid in pids(self.hosts[host].namespace):
            try:
                with open(f"/proc/{pid}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])
        return total / os.sysconf("SC_CLK_TCK")

    def remove(self) -> list[str]:
        return remove_leftovers(self.tag)

    def __enter__(self) -> Network:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

"""Where a webhook may point: http(s) URLs of public addresses only (no server-side request
forgery), checked when a hook is saved and again on every connection.

A URL must be ``http`` or ``https`` with a host, and every address its host resolves to must be
public: private, loopback, link-local, carrier-grade NAT, multicast, reserved and unspecified
addresses are refused (``ipaddress``'s ``is_global``), IPv4-mapped IPv6 by the IPv4 address it
maps, unless the operator allows their networks in ``settings.WEBHOOKS_ALLOWED_NETWORKS``.

At delivery the check runs inside the connection itself (``GuardedBackend``, the network backend
of the HTTP client): the host is resolved once, every address checked, and the socket connected
to a checked address — never to a second lookup a DNS rebinding could answer differently. TLS
still verifies the certificate against the URL's host name. Proxies from the environment are
not used (they would connect for us, unchecked), nor are redirects followed.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from functools import cache
from typing import Any
from urllib.parse import urlsplit

import httpcore2
import httpx2
from django.conf import settings
from httpcore2 import SyncBackend

from annotation.errors import ApplicationError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class AddressRefused(ApplicationError):
    """A webhook URL whose scheme, host or addresses are not allowed."""


@cache
def _allowed_networks(
    spelled: tuple[str, ...],
) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(network, strict=False) for network in spelled)


def address_allowed(address: Address) -> bool:
    """Whether a webhook may connect to ``address``: a public one, or one in the operator's
    ``WEBHOOKS_ALLOWED_NETWORKS``."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    networks = _allowed_networks(tuple(getattr(settings, "WEBHOOKS_ALLOWED_NETWORKS", ())))
    if any(address in network for network in networks):
        return True
    return address.is_global and not address.is_multicast


def resolve(host: str, port: int) -> list[Address]:
    """Every address ``host`` resolves to (an address literal: itself); AddressRefused when it
    resolves to none."""
    try:
        return [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise AddressRefused(
            f"The host {host} could not be resolved ({error}).", {"url": "unresolvable"}
        ) from error
    addresses: list[Address] = []
    for _family, _type, _proto, _name, sockaddr in found:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise AddressRefused(f"The host {host} has no address.", {"url": "unresolvable"})
    return addresses


def checked_addresses(host: str, port: int) -> list[Address]:
    """The addresses of ``host``, all of them allowed; AddressRefused naming the first that is
    not (one refused address refuses the host: which one a client gets is not ours to pick)."""
    addresses = resolve(host, port)
    for address in addresses:
        if not address_allowed(address):
            what = (
                host if str(address) == host.strip("[]") else f"{host} points to {address}, which"
            )
            raise AddressRefused(
                f"{what} is a private, loopback or link-local address: webhooks go to public "
                "addresses only (an operator may allow networks in WEBHOOKS_ALLOWED_NETWORKS).",
                {"url": "address_not_allowed"},
            )
    return addresses


def url_check(url: str) -> str:
    """``url`` if a webhook may point there now (scheme, host, every address); AddressRefused
    saying what is wrong otherwise."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https"):
        raise AddressRefused(
            "A webhook URL starts with https:// (or http://).", {"url": "scheme_not_allowed"}
        )
    if not parts.hostname:
        raise AddressRefused("The webhook URL has no host.", {"url": "no_host"})
    if parts.username or parts.password:
        raise AddressRefused(
            "Put no user name or password in the URL: the signature authenticates us.",
            {"url": "credentials_in_url"},
        )
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as error:
        raise AddressRefused(f"The URL's port is not valid ({error}).", {"url": "port"}) from error
    checked_addresses(parts.hostname, port)
    return url.strip()


class GuardedBackend(SyncBackend):
    """httpcore's network backend that connects only to allowed addresses (the module
    docstring): resolve, check every address, connect to the first that answers."""

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        try:
            addresses = checked_addresses(host, port)
        except AddressRefused as refused:
            raise RefusedConnection(refused.message) from refused
        last: Exception | None = None
        for address in addresses:
            try:
                return super().connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except httpcore2.ConnectError as error:  # try the host's next address
                last = error
        assert last is not None
        raise last


class RefusedConnection(httpcore2.ConnectError):
    """A connection the address check refused (a ConnectError, so httpx maps it)."""


def guarded_client(timeout: float) -> httpx2.Client:
    """An HTTP client whose every connection goes through ``GuardedBackend``; no proxies from
    the environment, no redirects followed, ``timeout`` seconds for connect, read and write."""
    transport = httpx2.HTTPTransport(retries=0)
    # httpx has no argument for the network backend; its pool takes it when it makes a
    # connection, so replacing it before the first request covers every connection.
    transport._pool._network_backend = GuardedBackend()
    return httpx2.Client(
        transport=transport,
        timeout=httpx2.Timeout(timeout),
        follow_redirects=False,
        trust_env=False,
    )

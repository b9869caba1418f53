"""Where a webhook may point: http(s) to public addresses only, checked when saved and again
inside every connection (no server-side request forgery, no DNS rebinding)."""

from __future__ import annotations

import socket

import pytest

from webhooks.addresses import AddressRefused, guarded_client, url_check

PUBLIC = "93.184.215.14"  # a public address literal: no DNS needed


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/hook",
        "file:///etc/passwd",
        "gopher://127.0.0.1/",
        "https:///no-host",
        "https://user:secret@example.com/hook",
        "http://127.0.0.1:8000/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://172.16.0.1/hook",
        "http://192.168.1.1/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://100.64.0.1/hook",
        "http://0.0.0.0/hook",
        "http://224.0.0.1/hook",
        "http://[::1]/hook",
        "http://[fe80::1]/hook",
        "http://[fd00::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
    ],
)
def test_urls_that_are_not_public_http_are_refused(url, settings):
    settings.WEBHOOKS_ALLOWED_NETWORKS = ()
    with pytest.raises(AddressRefused) as refused:
        url_check(url)
    assert refused.value.extra["url"]


def test_a_public_https_url_is_accepted(settings):
    settings.WEBHOOKS_ALLOWED_NETWORKS = ()
    assert url_check(f" https://{PUBLIC}/hook ") == f"https://{PUBLIC}/hook"


def test_the_operator_may_allow_a_private_network(settings):
    settings.WEBHOOKS_ALLOWED_NETWORKS = ("127.0.0.0/8",)
    assert url_check("http://127.0.0.1:9/hook") == "http://127.0.0.1:9/hook"
    with pytest.raises(AddressRefused):
        url_check("http://10.0.0.1/hook")


def test_a_host_is_refused_when_any_of_its_addresses_is_private(settings, monkeypatch):
    settings.WEBHOOKS_ALLOWED_NETWORKS = ()

    def two_addresses(host, port, *args, **kwargs):
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC, port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.7", port)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", two_addresses)
    with pytest.raises(AddressRefused, match="10.0.0.7"):
        url_check("https://mixed.example/hook")


def test_dns_rebinding_is_refused_inside_the_connection(receiver, settings, monkeypatch):
    """The host resolved to a public address when the hook was saved; at delivery it resolves
    to loopback (where the receiver listens): the connection is refused and nothing arrives."""
    settings.WEBHOOKS_ALLOWED_NETWORKS = ()
    port = int(receiver.url.rsplit(":", 1)[1].split("/")[0])
    answers = iter([PUBLIC])
    real = socket.getaddrinfo

    def rebinding(host, port_, *args, **kwargs):
        if host != "rebind.example":
            return real(host, port_, *args, **kwargs)
        address = next(answers, "127.0.0.1")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port_))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    url = f"http://rebind.example:{port}/hook"
    assert url_check(url) == url  # first answer: public
    with guarded_client(1.0) as client, pytest.raises(Exception, match="loopback"):
        client.post(url, content=b"{}")
    assert receiver.requests == []

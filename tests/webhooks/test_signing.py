"""Signatures: HMAC-SHA256 over the timestamp and the body with the hook's secret; the
receiver's check refuses a changed body, another secret and an old timestamp."""

from __future__ import annotations

import hashlib
import hmac

from webhooks.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, secret_new, signed_headers, verify

BODY = b'{"events":[{"id":"1","type":"ping"}]}'


def test_the_documented_recipe_computes_the_header():
    secret = secret_new()
    headers = signed_headers(secret, BODY, "delivery-1", now=1_800_000_000)
    expected = hmac.new(secret.encode(), b"1800000000." + BODY, hashlib.sha256).hexdigest()
    assert headers[TIMESTAMP_HEADER] == "1800000000"
    assert headers[SIGNATURE_HEADER] == f"v1={expected}"


def test_a_signed_body_verifies_and_a_changed_one_does_not():
    secret = secret_new()
    headers = signed_headers(secret, BODY, "d", now=1_800_000_000)
    stamp, signature = headers[TIMESTAMP_HEADER], headers[SIGNATURE_HEADER]
    assert verify(secret, BODY, stamp, signature, now=1_800_000_010)
    assert not verify(secret, BODY + b" ", stamp, signature, now=1_800_000_010)
    assert not verify(secret_new(), BODY, stamp, signature, now=1_800_000_010)
    assert not verify(secret, BODY, "1800000001", signature, now=1_800_000_010)


def test_a_replayed_request_is_refused_after_the_tolerance():
    secret = secret_new()
    headers = signed_headers(secret, BODY, "d", now=1_800_000_000)
    stamp, signature = headers[TIMESTAMP_HEADER], headers[SIGNATURE_HEADER]
    assert verify(secret, BODY, stamp, signature, now=1_800_000_000 + 300)
    assert not verify(secret, BODY, stamp, signature, now=1_800_000_000 + 301)
    assert not verify(secret, BODY, "not a number", signature, now=1_800_000_000)


def test_secrets_are_new_each_time():
    assert len({secret_new() for _ in range(20)}) == 20
    assert all(len(secret_new()) > 40 for _ in range(3))

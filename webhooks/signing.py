"""Signatures of webhook requests: HMAC-SHA256 with the hook's secret over the timestamp and
the body, so a receiver can check that a request is ours, unchanged and recent.

Every request carries (webhooks/README.md has the receiver's recipe):

* ``Rungwise-Webhook-Id``: the delivery's id (a repeat of the same events has a new one);
* ``Rungwise-Webhook-Timestamp``: seconds since the epoch when the request was signed;
* ``Rungwise-Webhook-Signature``: ``v1=`` and the hex HMAC-SHA256 of
  ``"<timestamp>.".encode() + body`` keyed with the hook's secret (UTF-8).

A receiver recomputes the HMAC over the raw body it received, compares in constant time, and
refuses a timestamp more than five minutes from its own clock (``TOLERANCE_SECONDS``): a
captured request cannot be replayed later, and its timestamp cannot be changed without the
secret.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

ID_HEADER = "Rungwise-Webhook-Id"
TIMESTAMP_HEADER = "Rungwise-Webhook-Timestamp"
SIGNATURE_HEADER = "Rungwise-Webhook-Signature"
VERSION = "v1"
#: How far a receiver should let a timestamp stray from its clock.
TOLERANCE_SECONDS = 300


def secret_new() -> str:
    """A new hook secret: 32 random bytes, URL-safe, prefixed so people recognise it."""
    return "whsec_" + secrets.token_urlsafe(32)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value for ``body`` sent at ``timestamp``."""
    digest = hmac.new(
        secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256
    ).hexdigest()
    return f"{VERSION}={digest}"


def signed_headers(secret: str, body: bytes, delivery_id: str, now: float | None = None) -> dict:
    """The headers of a request carrying ``body``: id, timestamp, signature, JSON."""
    timestamp = int(now if now is not None else time.time())
    return {
        "Content-Type": "application/json",
        "User-Agent": "Rungwise-Webhooks/1",
        ID_HEADER: delivery_id,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: signature(secret, timestamp, body),
    }


def verify(
    secret: str,
    body: bytes,
    timestamp_header: str,
    signature_header: str,
    *,
    now: float | None = None,
    tolerance: int = TOLERANCE_SECONDS,
) -> bool:
    """The receiver's check (the recipe in webhooks/README.md, as code): the signature matches
    the body and timestamp, and the timestamp is within ``tolerance`` seconds of ``now``."""
    try:
        timestamp = int(timestamp_header)
    except (TypeError, ValueError):
        return False
    current = now if now is not None else time.time()
    if abs(current - timestamp) > tolerance:
        return False
    expected = signature(secret, timestamp, body)
    return any(
        hmac.compare_digest(expected, candidate.strip())
        for candidate in signature_header.split(",")
    )

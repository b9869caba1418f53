"""A small client of Prolific's researcher API (https://docs.prolific.com/api-reference):
the calls a study needs after it ran. Token and base URL come from settings (PROLIFIC_TOKEN,
PROLIFIC_API_URL); every request sends ``Authorization: Token <token>`` and JSON.

- ``study_submissions(study_id)``: GET ``studies/{id}/submissions/`` (following ``_links.next``
  when Prolific pages the list): each ``{"id", "participant_id", "status", "started_at", …}``,
  status one of ACTIVE, AWAITING REVIEW, APPROVED, RETURNED, TIMED-OUT, REJECTED, SCREENED OUT…
- ``approve(submission_id)`` / ``reject(submission_id, message=…, category=…)``: POST
  ``submissions/{id}/transition/`` with ``{"action": "APPROVE"}`` or ``{"action": "REJECT",
  "message", "rejection_category"}`` (Prolific wants a message of at least 100 characters).
- ``bonus_create(study_id, [(participant_id, amount), …])``: POST
  ``submissions/bonus-payments/`` with ``{"study_id", "csv_bonuses": "pid,1.50\\n…"}`` → the
  bulk payment's id; ``bonus_pay(id)``: POST ``bulk-bonus-payments/{id}/pay/`` (not idempotent
  on Prolific's side: call it once per bulk payment).

Errors (HTTP ≥ 400, network) raise ProlificError with Prolific's answer (``extra["status"]``:
the HTTP status; absent when Prolific could not be reached). Every call is logged (logger
``crowd.prolific``): method, URL, status or error; never the token.

**The token goes to the configured API host only.** Every URL the client opens — a path joined
to the base, a ``_links.next`` Prolific returns, the target of a redirect — must have the scheme,
host and port of ``PROLIFIC_API_URL``; any other (another host or port, ``file://``, plain HTTP
where the base is HTTPS) is refused before a byte is sent (OffHostURL, logged as an error, not
retried), so a tampered answer cannot make the client hand the token elsewhere or read a file.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import Any

from django.conf import settings

from annotation.errors import ApplicationError

#: Prolific's rejection categories (the ``rejection_category`` of a REJECT transition).
REJECTION_CATEGORIES = (
    "TOO_QUICKLY",
    "TOO_SLOWLY",
    "FAILED_INSTRUCTIONS",
    "INCOMP_LONGITUDINAL",
    "FAILED_CHECK",
    "LOW_EFFORT",
    "MALINGERING",
    "NO_CODE",
    "BAD_CODE",
    "NO_DATA",
    "UNSUPP_DEVICE",
    "OTHER",
)
MIN_REJECTION_MESSAGE = 100

logger = logging.getLogger(__name__)


class ProlificError(ApplicationError):
    status = 502


class OffHostURL(ProlificError):
    """A URL outside the configured API's origin (a pagination link or a redirect): refused
    before anything is sent to it; sending again would be refused again."""


def _origin(url: str) -> tuple[str, str, int | None]:
    """Scheme, host and port of ``url`` (default ports filled in)."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # a port that is not a number: no origin matches it
        return scheme, "", None
    return scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme)


def _on_origin(url: str, base: str) -> str | None:
    """``url`` rebuilt on ``base``'s scheme and host exactly as configured (so what urllib
    connects to is never parsed from Prolific's answer), or None when ``url`` names another
    origin."""
    if _origin(url) != _origin(base):
        return None
    parts, configured = urllib.parse.urlsplit(url), urllib.parse.urlsplit(base)
    return urllib.parse.urlunsplit(
        (configured.scheme, configured.netloc, parts.path, parts.query, "")
    )


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only within the API's origin; any other target (``file://`` too)
    raises OffHostURL before the redirected request, which would carry the Authorization
    header along, is sent."""

    def __init__(self, base_url: str):
        self.base_url = base_url

    def http_error_302(self, req, fp, code, msg, headers):
        location = headers.get("location") or headers.get("uri")
        if location is not None:
            self._target(req, fp, code, urllib.parse.urljoin(req.full_url, location))
        return super().http_error_302(req, fp, code, msg, headers)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        target = self._target(req, fp, code, newurl)
        return super().redirect_request(req, fp, code, msg, headers, target)

    def _target(self, req, fp, code, newurl: str) -> str:
        target = _on_origin(newurl, self.base_url)
        if target is None:
            fp.close()
            raise _off_host(req.get_method(), newurl, f"a {code} redirect from {req.full_url}")
        return target


def _off_host(method: str, url: str, source: str) -> OffHostURL:
    logger.error(
        "Prolific %s %s -> refused: %s leads off the configured API host (PROLIFIC_API_URL)",
        method,
        url,
        source,
    )
    return OffHostURL(
        f"Refused to send the Prolific token to {url} ({source}): only the host of "
        "PROLIFIC_API_URL receives it.",
        {"url": url},
    )


class ProlificClient:
    def __init__(
        self, token: str | None = None, base_url: str | None = None, *, timeout: float = 20
    ):
        self.token = token if token is not None else settings.PROLIFIC_TOKEN
        self.base_url = (base_url or settings.PROLIFIC_API_URL).rstrip("/") + "/"
        self.timeout = timeout
        scheme, host, _port = _origin(self.base_url)
        if scheme not in ("http", "https") or not host:
            raise ProlificError(
                f"PROLIFIC_API_URL must be an http(s) URL, not {self.base_url!r}.",
                {"PROLIFIC_API_URL": self.base_url},
                status=400,
            )
        self._opener = urllib.request.build_opener(_SameOriginRedirects(self.base_url))
        if not self.token:
            raise ProlificError(
                "No Prolific API token: set PROLIFIC_TOKEN in the environment.",
                {"PROLIFIC_TOKEN": "required"},
                status=400,
            )

    def _request(self, method: str, path_or_url: str, body: Any = None) -> Any:
        """One call; ``path_or_url``: a path under the base URL or a URL Prolific gave (a
        ``next`` link), refused unless it is on the API's origin (see the module's docstring)."""
        asked = urllib.parse.urljoin(self.base_url, path_or_url)
        url = _on_origin(asked, self.base_url)
        if url is None:
            raise _off_host(method, asked, "a link in Prolific's answer")
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            url,
            data=data,
            method=method,
            headers={
                "Authorization": f"Token {self.token}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
        )
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                raw = response.read()
                logger.info("Prolific %s %s -> %s", method, url, response.status)
        except urllib.error.HTTPError as error:
            detail = error.read()[:2000].decode("utf-8", "replace")
            logger.warning("Prolific %s %s -> %s: %s", method, url, error.code, detail[:300])
            raise ProlificError(
                f"Prolific answered {error.code} to {method} {url}: {detail}",
                {"status": error.code},
            ) from None
        except (urllib.error.URLError, TimeoutError, OSError) as error:
            logger.warning("Prolific %s %s -> unreachable: %s", method, url, error)
            raise ProlificError(f"Prolific could not be reached ({error}).") from None
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    @staticmethod
    def _id(value: str, what: str) -> str:
        value = str(value or "").strip()
        if not value or not all(ch.isalnum() or ch in "-_" for ch in value):
            raise ProlificError(f"Not a Prolific {what} id: {value!r}.", {what: value}, status=400)
        return value

    def study_submissions(self, study_id: str) -> list[dict[str, Any]]:
        url: str | None = f"studies/{self._id(study_id, 'study')}/submissions/"
        rows: list[dict[str, Any]] = []
        while url:
            answer = self._request("GET", url)
            rows += list(answer.get("results") or [])
            url = ((answer.get("_links") or {}).get("next") or {}).get("href")
        return rows

    def approve(self, submission_id: str) -> Any:
        return self._request(
            "POST",
            f"submissions/{self._id(submission_id, 'submission')}/transition/",
            {"action": "APPROVE"},
        )

    def reject(self, submission_id: str, *, message: str, category: str) -> Any:
        if category not in REJECTION_CATEGORIES:
            raise ProlificError(
                f"Unknown rejection category {category!r}.", {"category": category}, status=400
            )
        if len(message.strip()) < MIN_REJECTION_MESSAGE:
            raise ProlificError(
                f"Prolific needs a rejection message of at least {MIN_REJECTION_MESSAGE} "
                "characters: tell the participant what went wrong.",
                {"message": len(message.strip())},
                status=400,
            )
        return self._request(
            "POST",
            f"submissions/{self._id(submission_id, 'submission')}/transition/",
            {"action": "REJECT", "message": message.strip(), "rejection_category": category},
        )

    def bonus_create(self, study_id: str, bonuses: Iterable[tuple[str, Any]]) -> str:
        lines = []
        for participant_id, amount in bonuses:
            try:
                value = Decimal(str(amount))
            except InvalidOperation:
                value = Decimal(-1)
            if not value.is_finite() or value <= 0:
                raise ProlificError(
                    f"Not a bonus amount: {amount!r}.", {"amount": str(amount)}, status=400
                )
            lines.append(
                f"{self._id(participant_id, 'participant')},{value.quantize(Decimal('0.01'))}"
            )
        if not lines:
            raise ProlificError("No bonuses to pay.", {"bonuses": "empty"}, status=400)
        answer = self._request(
            "POST",
            "submissions/bonus-payments/",
            {"study_id": self._id(study_id, "study"), "csv_bonuses": "\n".join(lines)},
        )
        return str(answer["id"])

    def bonus_pay(self, bulk_payment_id: str) -> Any:
        return self._request(
            "POST", f"bulk-bonus-payments/{self._id(bulk_payment_id, 'bonus payment')}/pay/", {}
        )


def retryable(error: ProlificError) -> bool:
    """Whether a failed call may be sent again: Prolific was not reached, was busy (429) or
    failed on its side (5xx); a 4xx answer and a refused off-host URL are final."""
    if isinstance(error, OffHostURL):
        return False
    if error.status != ProlificError.status:  # refused here, before anything was sent
        return False
    status = (error.extra or {}).get("status")
    return not isinstance(status, int) or status == 429 or status >= 500

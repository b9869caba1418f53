"""Throttles of the REST API (the rates are settings: ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]``)."""

from __future__ import annotations

import logging

from rest_framework.settings import api_settings
from rest_framework.throttling import ScopedRateThrottle

logger = logging.getLogger(__name__)


class ScopedThrottle(ScopedRateThrottle):
    """ScopedRateThrottle reading its rates when asked (so settings overrides apply), where a
    rate of "off" (or empty) switches the scope off."""

    def get_rate(self):
        rate = api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)
        if not rate or str(rate).lower() in {"off", "none", "0"}:
            return None
        return rate

    def allow_request(self, request, view):
        self.scope = getattr(view, self.scope_attr, None)
        if not self.scope:
            return True
        self.rate = self.get_rate()
        if self.rate is None:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)
        try:
            return super(ScopedRateThrottle, self).allow_request(request, view)
        except Exception as error:  # the cache (Redis) is down or its connection broke
            # Fail open: a throttle protects the service, and an outage of its counters must
            # not stop annotation or sign-in (tests/api/test_throttles.py).
            logger.warning("throttle %r: cache unavailable (%s); let through", self.scope, error)
            return True

"""Sign-in lockout: django-axes' backend in front of Django's ModelBackend, and axes' database
handler with a second limit per address (password spraying)."""

from __future__ import annotations

import logging

from axes.attempts import get_cool_off_threshold
from axes.backends import AxesStandaloneBackend
from axes.handlers.database import AxesDatabaseHandler
from axes.models import AccessAttempt
from axes.signals import user_locked_out
from django.conf import settings
from django.db.models import Sum

logger = logging.getLogger(__name__)


class LockoutBackend(AxesStandaloneBackend):
    """django-axes' backend, which refuses a sign-in while its (account, address) is locked out.

    Sign-ins through a web request (the login page, /admin/login/, the API token endpoint)
    always pass the request and are checked. Calls without one (Django's test client's
    ``login()``, management commands) have no address to lock: axes raises for those, so they
    go on to the next backend unchecked, as they would without axes."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


class LockoutHandler(AxesDatabaseHandler):
    """axes' database handler (AXES_HANDLER) with two limits: AXES_FAILURE_LIMIT failures per
    (account, address), as axes counts them, and LOGIN_ADDRESS_FAILURE_LIMIT failures from one
    address over every account (0: off), for AXES_COOLOFF_TIME either way. The second is here
    because axes compares every lockout parameter with one and the same limit. It is summed from
    axes' own AccessAttempt rows of that address, so a successful sign-in, which clears only its
    own account's failures, does not reset it."""

    def address_locked(self, request) -> bool:
        limit = settings.LOGIN_ADDRESS_FAILURE_LIMIT
        address = getattr(request, "axes_ip_address", None)
        if not limit or not address:
            return False
        failures = AccessAttempt.objects.filter(
            ip_address=address, attempt_time__gte=get_cool_off_threshold(request)
        ).aggregate(total=Sum("failures_since_start"))["total"]
        return (failures or 0) >= limit

    def is_locked(self, request, credentials=None) -> bool:
        return super().is_locked(request, credentials) or self.address_locked(request)

    def user_login_failed(self, sender, credentials, request=None, **kwargs):
        super().user_login_failed(sender, credentials, request, **kwargs)
        if request is None or getattr(request, "axes_locked_out", False):
            return
        if self.address_locked(request):
            logger.warning(
                "Sign-in locked out for address %s: %d or more failures across accounts",
                request.axes_ip_address,
                settings.LOGIN_ADDRESS_FAILURE_LIMIT,
            )
            request.axes_locked_out = True
            request.axes_credentials = credentials
            user_locked_out.send(
                "axes",
                request=request,
                username=(credentials or {}).get("username"),
                ip_address=request.axes_ip_address,
            )

"""The sign-in backend: django-axes' lockout check in front of Django's ModelBackend."""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend


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

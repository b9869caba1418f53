"""What the operator configured for single sign-on (rungwise/settings.py, "Single sign-on")."""

from __future__ import annotations

from django.conf import settings


def enabled() -> bool:
    """True when an OpenID provider is configured: the sign-in page offers it and the sso
    URLs answer (they are 404 otherwise)."""
    return bool(
        getattr(settings, "OIDC_RP_CLIENT_ID", "")
        and getattr(settings, "OIDC_OP_AUTHORIZATION_ENDPOINT", "")
    )


def provider_name() -> str:
    """The provider's name on the sign-in button ("Sign in with …")."""
    return str(getattr(settings, "RUNGWISE_SSO_NAME", "") or "single sign-on")


def local_passwords() -> bool:
    """False when the operator switched Rungwise's own passwords off: the sign-in page offers
    only the provider, and password sign-in, change and reset are refused."""
    return bool(getattr(settings, "RUNGWISE_LOCAL_PASSWORDS", True))

"""The sign-in backend: mozilla-django-oidc's code flow (token exchange, id-token signature
against the provider's JWKS, nonce, PKCE), with the checks Rungwise adds.

* Only an e-mail address the provider says it verified (``email_verified`` true) signs anyone
  in; it is matched case-insensitively to one active account. The library would match any
  ``email`` claim, which lets whoever controls a provider account claim a colleague's address.
* The id token must be for this client (``aud``) and, when OIDC_OP_ISSUER is set, from that
  issuer (``iss``); the library checks neither.
* A new account is created only when RUNGWISE_SSO_CREATE_USERS is on (sso.services); every
  sign-in applies the e-mail domain's memberships (sso.models.DomainMembership).

A refusal is stored in the session (``sso_error``) in words the sign-in page shows.
"""

from __future__ import annotations

import logging

import jwt
from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from sso import services

logger = logging.getLogger(__name__)

SESSION_ERROR = "sso_error"


def _true(value) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


class VerifiedEmailBackend(OIDCAuthenticationBackend):
    def _refuse(self, message: str) -> None:
        if getattr(self, "request", None) is not None:
            self.request.session[SESSION_ERROR] = message
        raise SuspiciousOperation(message)

    def verify_token(self, token, **kwargs):
        try:
            payload = super().verify_token(token, **kwargs)
        except (SuspiciousOperation, jwt.PyJWTError):
            # A bad signature, nonce or algorithm (the library), or an expired or
            # not-yet-valid token (PyJWT, which the library lets through as a server error).
            self._refuse("The provider's answer could not be verified; try again.")
        audience = payload.get("aud")
        audiences = [audience] if isinstance(audience, str) else list(audience or [])
        if self.OIDC_RP_CLIENT_ID not in audiences:
            self._refuse("The provider's answer was meant for another application.")
        issuer = getattr(settings, "OIDC_OP_ISSUER", "")
        if issuer and payload.get("iss") != issuer:
            self._refuse("The provider's answer came from an unexpected issuer.")
        return payload

    def verify_claims(self, claims) -> bool:
        email = claims.get("email") or ""
        if not email:
            self._refuse("The provider did not tell us your e-mail address.")
        if not _true(claims.get("email_verified")):
            self._refuse(
                f"The provider has not verified the e-mail address {email}; verify it there "
                "and sign in again."
            )
        return True

    def filter_users_by_claims(self, claims):
        return self.UserModel.objects.filter(email__iexact=claims["email"], is_active=True)

    def get_or_create_user(self, access_token, id_token, payload):
        try:
            user = super().get_or_create_user(access_token, id_token, payload)
        except SuspiciousOperation:
            # Several active accounts share the address (the library refuses to pick one).
            self.request.session.setdefault(
                SESSION_ERROR,
                "Several Rungwise accounts use your e-mail address; ask an administrator to "
                "merge them.",
            )
            raise
        if user is None:
            # No account, and creating them is switched off (OIDC_CREATE_USER).
            self.request.session[SESSION_ERROR] = (
                "No Rungwise account uses your e-mail address yet; ask a project admin to "
                "invite you."
            )
        return user

    def create_user(self, claims):
        return services.user_create(
            email=claims["email"],
            first_name=claims.get("given_name") or "",
            last_name=claims.get("family_name") or "",
        )

    def update_user(self, user, claims):
        services.domain_memberships_grant(user=user, email=claims["email"])
        return user

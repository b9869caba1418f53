"""Token authentication for scripts, in one hand-written statement.

DRF's TokenAuthentication fetches the token and its user through the ORM on every request; on
the annotator loop (next → submit) that query's compilation cost more than the rest of the
sign-in. Same contract as DRF's: `Authorization: Token <key>`, 401 for an unknown key or an
inactive user, `request.auth` is the Token.
"""

from __future__ import annotations

from functools import cache

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

from annotation import sql


@cache
def _token_sql(vendor: str) -> str:
    user = get_user_model()
    return (
        f"SELECT {sql.columns(Token, 't')}, {sql.columns(user, 'u')}"
        f" FROM {sql.table(Token)} t JOIN {sql.table(user)} u ON u.id = t.user_id"
        f" WHERE t.key = %(key)s"
    )


class TokenAuthentication(authentication.TokenAuthentication):
    def authenticate_credentials(self, key):
        row = sql.fetchone(_token_sql(connection.vendor), {"key": key})
        if row is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        (token, user), _extras = sql.unpack(row, (Token, get_user_model()))
        token.user = user
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return token.user, token

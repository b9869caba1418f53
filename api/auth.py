"""Token authentication for scripts, in one hand-written statement.

DRF's TokenAuthentication fetches the token and its user through the ORM on every request; on
the annotator loop (next → submit) that query's compilation cost more than the rest of the
sign-in. Same contract as DRF's: `Authorization: Token <key>`, 401 for an unknown key or an
inactive user (403 while session authentication is listed first), `request.auth` is the Token.
Beyond DRF's: a token expires
``API_TOKEN_MAX_AGE_SECONDS`` after it was issued (refused, saying so; ask for a new one), and a
user's tokens are deleted when their password changes (``tokens_revoke_on_password_change``,
connected in api/apps.py).

Named tokens (api/models.py ``PersonalToken``, made on the token page): a key starting with
``KEY_PREFIX`` is looked up by its SHA-256 instead, refused once past its own ``expires_at``
(``request.auth`` is then the PersonalToken, its ``last_used_at`` kept to the minute); a changed
password ends them too.
"""

from __future__ import annotations

from datetime import timedelta
from functools import cache

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

from annotation import sql
from api.models import KEY_PREFIX, PersonalToken
from api.services import key_hash, personal_token_used


@cache
def token_select(vendor: str) -> tuple[str, str, str]:
    """SQL of the token sign-in: the token's and its user's columns, the join they come from
    (aliases ``t`` and ``u``) and the user's id column (for a statement that reads the token
    together with something of that user's: api/views/annotate_lean.py). The key is
    ``%(key)s``; read the row with credentials_from_row."""
    user = get_user_model()
    t, u = sql.quoted(Token, "t"), sql.quoted(user, "u")
    return (
        f"{sql.columns(Token, 't')}, {sql.columns(user, 'u')}",
        f"{sql.table(Token)} t JOIN {sql.table(user)} u ON {u.id} = {t.user_id}",
        u.id,
    )


@cache
def token_width() -> int:
    """How many columns token_select's select list gives (the user model is fixed for the
    process's life, as Django requires)."""
    return sql.width(Token) + sql.width(get_user_model())


@cache
def _token_sql(vendor: str) -> str:
    columns, joins, _user = token_select(vendor)
    return f"SELECT {columns} FROM {joins} WHERE {sql.quoted(Token, 't').key} = %(key)s"


def credentials_from_row(row):
    """(user, token) from a row that starts with token_select's columns (None: no such key),
    with TokenAuthentication's refusals (AuthenticationFailed)."""
    if row is None:
        raise exceptions.AuthenticationFailed(_("Invalid token."))
    (token, user), _extras = sql.unpack(row[: token_width()], (Token, get_user_model()))
    token.user = user
    if not token.user.is_active:
        raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
    if _expired(token):
        raise exceptions.AuthenticationFailed(
            "This token has expired; ask for a new one at /api/auth/token/."
        )
    return token.user, token


class TokenAuthentication(authentication.TokenAuthentication):
    def authenticate_credentials(self, key):
        if key.startswith(KEY_PREFIX):
            return _personal_credentials(key)
        return credentials_from_row(sql.fetchone(_token_sql(connection.vendor), {"key": key}))


def _personal_credentials(key: str):
    token = PersonalToken.objects.select_related("user").filter(key_hash=key_hash(key)).first()
    if token is None:
        raise exceptions.AuthenticationFailed(_("Invalid token."))
    if not token.user.is_active:
        raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
    if token.has_expired:
        raise exceptions.AuthenticationFailed(
            f"The token {token.name!r} has expired; make a new one on your API tokens page."
        )
    personal_token_used(token)
    return token.user, token


def _expired(token: Token) -> bool:
    return token.created < timezone.now() - timedelta(seconds=settings.API_TOKEN_MAX_AGE_SECONDS)


@transaction.atomic
def token_for(user) -> Token:
    """The user's live token, or a new one when they have none or theirs has expired."""
    token = Token.objects.select_for_update().filter(user=user).first()
    if token is not None and not _expired(token):
        return token
    if token is not None:
        token.delete()
    return Token.objects.create(user=user)


def tokens_revoke_on_password_change(sender, instance, update_fields=None, **kwargs) -> None:
    """pre_save of the user model: a changed password ends every API token of the user (as it
    ends their other sessions), whichever way it was changed (admin, views, set_password)."""
    if instance.pk is None or (update_fields is not None and "password" not in update_fields):
        return
    stored = sender.objects.filter(pk=instance.pk).values_list("password", flat=True).first()
    if stored is not None and stored != instance.password:
        Token.objects.filter(user_id=instance.pk).delete()
        PersonalToken.objects.filter(user_id=instance.pk).delete()

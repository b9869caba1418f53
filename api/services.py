"""Named API tokens (api/models.py) made, used and revoked (CONTRIBUTING.md, "Services own the
transaction")."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from annotation.api import clean_text
from annotation.errors import ApplicationError, Conflict, NotFound
from api.models import KEY_PREFIX, PersonalToken

#: The longest life a named token may be given, in days.
MAX_TOKEN_DAYS = 365
#: How stale ``last_used_at`` may be before a request writes it again: one write a minute at
#: most per token, not one per request of the annotator loop.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def key_hash(key: str) -> str:
    """The stored form of a named token's key (SHA-256, hex)."""
    return hashlib.sha256(key.encode()).hexdigest()


@transaction.atomic
def personal_token_create(*, user: User, name: str, days: int) -> tuple[PersonalToken, str]:
    """A new named token of ``user`` living ``days`` days (1 to ``MAX_TOKEN_DAYS``), and its
    key: returned only here, never stored (ApplicationError naming ``name`` or ``days`` for
    an empty or taken name or days out of range; Conflict for a name the person already
    gave another token)."""
    name = clean_text(name, field="name", max_length=100)
    if not name:
        raise ApplicationError(
            "Name the token (e.g. the script that uses it).", {"name": "required"}
        )
    if not 1 <= days <= MAX_TOKEN_DAYS:
        raise ApplicationError(
            f"A token lives from 1 to {MAX_TOKEN_DAYS} days.", {"days": str(days)}
        )
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    try:
        with transaction.atomic():
            token = PersonalToken.objects.create(
                user=user,
                name=name,
                key_hash=key_hash(key),
                key_start=key[:10],
                expires_at=timezone.now() + timedelta(days=days),
            )
    except IntegrityError:
        raise Conflict(
            f"You already have a token named {name!r}; choose another name.", {"name": "taken"}
        ) from None
    return token, key


@transaction.atomic
def personal_token_revoke(*, user: User, token_id: int) -> None:
    """Delete one of ``user``'s named tokens: requests with its key are refused from now on.
    Someone else's token id answers as an unknown one (NotFound)."""
    deleted, _ = PersonalToken.objects.filter(user=user.pk, pk=token_id).delete()
    if not deleted:
        raise NotFound("There is no such token among yours.")


def personal_token_used(token: PersonalToken) -> None:
    """Note that ``token`` was just used (at most one write per ``LAST_USED_RESOLUTION``)."""
    now = timezone.now()
    if token.last_used_at is not None and now - token.last_used_at < LAST_USED_RESOLUTION:
        return
    PersonalToken.objects.filter(
        Q(last_used_at=None) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION), pk=token.pk
    ).update(last_used_at=now)
    token.last_used_at = now

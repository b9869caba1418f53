"""Reads of the token page (api/pages.py)."""

from __future__ import annotations

from typing import Any

from api.models import PersonalToken


def personal_tokens(user: Any) -> list[PersonalToken]:
    """``user``'s named tokens, newest first (none for anonymous users)."""
    if not user.is_authenticated:
        return []
    return list(PersonalToken.objects.filter(user=user.pk).order_by("-created_at", "-pk"))

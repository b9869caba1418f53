"""Named API tokens a person makes on their token page (api/pages.py): several per person, each
with an expiry and the time it was last used, revoked one by one.

Beside DRF's one ``Token`` per person that ``/api/auth/token/`` hands out (api/auth.py): both are
sent as ``Authorization: Token <key>``. A named token's key starts with ``KEY_PREFIX`` and only
its SHA-256 is stored, so the key is shown once, when it is made."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

#: The start of every named token's key: tells the authentication which table to read.
KEY_PREFIX = "rw_"


class PersonalToken(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="personal_tokens"
    )
    name = models.CharField(max_length=100)
    #: SHA-256 (hex) of the key; the key itself is never stored.
    key_hash = models.CharField(max_length=64, unique=True)
    #: The key's first characters, to tell tokens apart on the page.
    key_start = models.CharField(max_length=12)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="personal_token_unique_name")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.key_start}…)"

    @property
    def has_expired(self) -> bool:
        return self.expires_at <= timezone.now()

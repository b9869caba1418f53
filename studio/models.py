"""Invite links: a project role offered to whoever opens the link before it expires."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import Project, Role


class Invite(models.Model):
    """A link (``token``) that makes its opener a member of ``project`` with ``role``, until
    ``expires_at`` or ``max_uses`` uses (0: unlimited), unless revoked."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="invites")
    role = models.CharField(max_length=16, choices=Role.choices)
    token = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    max_uses = models.PositiveIntegerField(default=0)
    uses = models.PositiveIntegerField(default=0)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.project.slug} {self.role} invite"

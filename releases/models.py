"""Releases: frozen, checksummed exports of a project's resolved items."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import Project


class Release(models.Model):
    """A frozen, checksummed export of a project's resolved items. Immutable once published."""

    class Status(models.TextChoices):
        BUILDING = "building", "Building"
        PUBLISHED = "published", "Published"
        FAILED = "failed", "Failed"

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="releases")
    version = models.PositiveIntegerField()
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.BUILDING)
    notes = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)
    archive = models.FileField(upload_to="releases/", blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    manifest = models.JSONField(default=dict, blank=True)
    stats = models.JSONField(default=dict, blank=True)
    message = models.TextField(blank=True)
    started_at = models.DateTimeField(
        null=True, blank=True, help_text="When the current build attempt began."
    )
    attempts = models.PositiveSmallIntegerField(
        default=0, help_text="Build attempts started for this version (the sweep caps them)."
    )

    # -- the Hugging Face Hub (releases/hf_push.py) --------------------------------------------
    class HubStatus(models.TextChoices):
        NONE = "", "Not pushed"
        PUSHING = "pushing", "Pushing"
        PUSHED = "pushed", "Pushed"
        FAILED = "failed", "Push failed"

    hub_repo_id = models.CharField(
        max_length=200, blank=True, help_text="The Hub dataset repository it was pushed to."
    )
    hub_revision = models.CharField(
        max_length=64, blank=True, help_text="The Hub commit the push made (its revision)."
    )
    hub_status = models.CharField(
        max_length=10, choices=HubStatus.choices, default=HubStatus.NONE, blank=True
    )
    hub_message = models.TextField(blank=True, help_text="Why the last push failed, in words.")
    hub_pushed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "annotation_release"
        ordering = ["project", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["project", "version"], name="release_unique_version")
        ]

    def __str__(self) -> str:
        return f"{self.project.slug} v{self.version}"

    @property
    def queued(self) -> bool:
        """Building, but no worker has started it yet: waiting in the queue, or its message was
        lost (published while the broker was down); the sweep or an admin's retry sends it."""
        return self.status == self.Status.BUILDING and self.started_at is None

"""Invite links (a project role offered to whoever opens the link before it expires), and the
data manager's tags and remembered columns (studio/data_manager)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import Item, Project, Role


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


class Tag(models.Model):
    """A label a project's admins put on items in the data manager (studio/data_manager), to
    find them again: ``items`` through ``ItemTag``. Names are unique within a project."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tags")
    name = models.CharField(max_length=60)
    items = models.ManyToManyField(Item, through="ItemTag", related_name="tags")

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="studio_tag_unique_name")
        ]

    def __str__(self) -> str:
        return self.name


class ItemTag(models.Model):
    """One tag on one item (the tag and the item belong to one project: services check it)."""

    tag = models.ForeignKey(Tag, on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tag", "item"], name="studio_item_tag_unique")
        ]
        # Tags of a page of items (item side); the tag filter uses the unique index (tag side).
        indexes = [models.Index(fields=["item"], name="studio_item_tag_item_idx")]

    def __str__(self) -> str:
        return f"{self.tag_id} on {self.item_id}"


class ItemColumns(models.Model):
    """The columns one member chose for a project's data manager, remembered between visits:
    ``columns`` is a list of column keys (studio/data_manager/columns.py spells them)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    columns = models.JSONField(default=list)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="studio_item_columns_unique")
        ]

    def __str__(self) -> str:
        return f"{self.project_id}/{self.user_id}: {len(self.columns)} columns"

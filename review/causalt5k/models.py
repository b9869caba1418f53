"""Models of the review plug-ins. METER keeps everything in the engine's tables; CausalT5k adds
the record of each release import (its normalisation report), kept apart from ``Project.settings``
because the report runs to megabytes and the project row is read on every page."""

from __future__ import annotations

from django.db import models


class CausalT5kImport(models.Model):
    """One import of a CausalT5k release into a project (review.causalt5k.services)."""

    project = models.ForeignKey(
        "annotation.Project", on_delete=models.CASCADE, related_name="causalt5k_imports"
    )
    root = models.CharField(max_length=500, help_text="The release folder read.")
    created_at = models.DateTimeField(auto_now_add=True)
    seconds = models.FloatField(help_text="Wall time of the whole import (read, normalise, write).")
    records = models.PositiveIntegerField(help_text="Records read from the valid files.")
    cases = models.PositiveIntegerField(help_text="Canonical cases, one item each.")
    report = models.JSONField(
        default=dict, help_text="The normalisation report (see review/README.md)."
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.project.slug}: {self.cases} cases from {self.root}"


class CausalT5kDuplicate(models.Model):
    """A case discarded by the near-duplicate queue: which cluster, which case survived it, why
    (review.causalt5k.pipeline). The case item itself is marked discarded."""

    item = models.OneToOneField(
        "annotation.Item", on_delete=models.CASCADE, related_name="causalt5k_duplicate"
    )
    cluster = models.ForeignKey(
        "annotation.Item", on_delete=models.CASCADE, related_name="causalt5k_discards"
    )
    # CASCADE, not SET_NULL: the record describes a discard within one project's items, which
    # go together; and Django sends a SET_NULL over all deleted items in one statement, past
    # the 65,535 parameters PostgreSQL binds (tests/test_database_backend.py).
    survivor = models.ForeignKey(
        "annotation.Item", null=True, on_delete=models.CASCADE, related_name="+"
    )
    reason = models.CharField(max_length=500)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.item_id}: {self.reason}"

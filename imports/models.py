"""Import batches: what came in, with its checksum, progress and row-level errors."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import Project


class ImportBatch(models.Model):
    """One uploaded file of candidate items, with its checksum, counts and row-level errors."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        VALIDATING = "validating", "Validating"
        WRITING = "writing", "Writing"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="import_batches")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    filename = models.CharField(max_length=255)
    file = models.FileField(upload_to="imports/%Y/%m/", blank=True)
    format = models.CharField(max_length=16)
    sha256 = models.CharField(max_length=64, blank=True)
    content_sha256 = models.CharField(
        max_length=64,
        blank=True,
        db_default="",
        help_text="SHA-256 of the file's rows in a canonical form defined by the importer that "
        "sets it (the same data in another encoding, line ending or format has the same one); "
        "empty where the importer keeps none.",
    )
    options = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    file_size = models.PositiveBigIntegerField(default=0, help_text="Bytes in the uploaded file.")
    bytes_done = models.PositiveBigIntegerField(
        default=0, help_text="Bytes checked so far by the validation pass (progress)."
    )
    rows_total = models.PositiveIntegerField(default=0)
    rows_done = models.PositiveIntegerField(default=0, help_text="Rows checked so far.")
    rows_written = models.PositiveIntegerField(default=0, help_text="Rows written so far.")
    items_created = models.PositiveIntegerField(default=0)
    items_updated = models.PositiveIntegerField(default=0)
    error_count = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list, blank=True)
    message = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    validated_at = models.DateTimeField(
        null=True, blank=True, help_text="When validation passed and writing began."
    )
    finished_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(
        default=0, help_text="Runs started for this batch (the sweep caps them)."
    )

    class Meta:
        db_table = "annotation_importbatch"
        verbose_name_plural = "import batches"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["project", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.filename} ({self.status})"

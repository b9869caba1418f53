"""Admin for import batches (their results are read-only; imports run through the import page)."""

from django.contrib import admin, messages

from annotation.admin import EngineAdmin
from annotation.errors import ApplicationError
from imports.models import ImportBatch
from imports.services import import_batch_mark_failed, import_batch_requeue


@admin.register(ImportBatch)
class ImportBatchAdmin(EngineAdmin):
    list_display = [
        "filename",
        "project",
        "format",
        "status",
        "rows_total",
        "items_created",
        "error_count",
        "created_at",
        "attempts",
    ]
    list_filter = ["status", "format", "project"]
    search_fields = ["filename", "sha256", "project__name"]
    autocomplete_fields = ["project"]
    raw_id_fields = ["created_by"]
    list_select_related = ["project"]
    readonly_fields = [
        "sha256",
        "status",
        "rows_total",
        "rows_done",
        "items_created",
        "items_updated",
        "error_count",
        "errors",
        "message",
        "created_at",
        "started_at",
        "finished_at",
        "attempts",
    ]
    actions = ["retry_import", "mark_failed"]

    @admin.action(description="Run the selected imports again from their stored files")
    def retry_import(self, request, queryset):
        for batch in queryset:
            try:
                import_batch_requeue(batch_id=batch.pk, reset_attempts=True)
            except ApplicationError as error:
                self.message_user(request, f"{batch}: {error.message}", messages.ERROR)
            else:
                self.message_user(request, f"{batch.filename}: sent to a worker to run again.")

    @admin.action(description="Mark the selected pending or running imports failed")
    def mark_failed(self, request, queryset):
        for batch in queryset.exclude(
            status__in=[ImportBatch.Status.SUCCEEDED, ImportBatch.Status.FAILED]
        ):
            import_batch_mark_failed(
                batch_id=batch.pk, reason=f"Marked failed by {request.user} in the admin."
            )
            self.message_user(request, f"{batch.filename}: marked failed.")

"""Admin for import batches (their results are read-only; imports run through the import page)."""

from django.contrib import admin

from imports.models import ImportBatch


@admin.register(ImportBatch)
class ImportBatchAdmin(admin.ModelAdmin):
    list_display = [
        "filename",
        "project",
        "format",
        "status",
        "rows_total",
        "items_created",
        "error_count",
        "created_at",
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
    ]

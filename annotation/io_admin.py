"""Read-only Django admin for releases and import batches.

Published releases are immutable and imports are records of what came in: the admin shows them
and changes nothing. Register from annotation/admin.py (owned by the pages):

    from .io_admin import ImportBatchAdmin, ReleaseAdmin
    admin.site.register(Release, ReleaseAdmin)
    admin.site.register(ImportBatch, ImportBatchAdmin)
"""

from __future__ import annotations

from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class ReleaseAdmin(ReadOnlyAdmin):
    list_display = ["project", "version", "status", "published_at", "sha256"]
    list_filter = ["status", "project"]
    search_fields = ["project__slug", "sha256"]


class ImportBatchAdmin(ReadOnlyAdmin):
    list_display = ["pk", "project", "filename", "status", "rows_total", "items_created",
                    "items_updated", "error_count", "created_at"]  # fmt: skip
    list_filter = ["status", "project"]
    search_fields = ["filename", "sha256"]

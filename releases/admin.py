"""Admin for releases: published releases never change and none is deleted here."""

from django.contrib import admin

from releases.models import Release


@admin.register(Release)
class ReleaseAdmin(admin.ModelAdmin):
    list_display = [
        "__str__",
        "project",
        "version",
        "status",
        "created_by",
        "created_at",
        "published_at",
    ]
    list_filter = ["status", "project"]
    search_fields = ["project__name", "project__slug", "notes", "sha256"]
    autocomplete_fields = ["project"]
    raw_id_fields = ["created_by"]
    list_select_related = ["project", "created_by"]
    readonly_fields = [
        "version",
        "status",
        "archive",
        "sha256",
        "manifest",
        "stats",
        "message",
        "created_at",
        "published_at",
    ]

    def has_change_permission(self, request, obj=None):
        # A published release never changes; notes may be fixed while it is still building.
        if obj is not None and obj.status == Release.Status.PUBLISHED:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return False

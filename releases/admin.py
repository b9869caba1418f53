"""Admin for releases: published releases never change and none is deleted here."""

from django.contrib import admin, messages

from annotation.admin import EngineAdmin
from annotation.errors import ApplicationError
from releases.models import Release
from releases.services import release_mark_failed, release_requeue


@admin.register(Release)
class ReleaseAdmin(EngineAdmin):
    list_display = [
        "__str__",
        "project",
        "version",
        "status",
        "created_by",
        "created_at",
        "published_at",
        "attempts",
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
        "started_at",
        "attempts",
    ]
    actions = ["retry_build", "mark_failed"]

    @admin.action(description="Build the selected releases again (building or failed ones)")
    def retry_build(self, request, queryset):
        for release in queryset:
            try:
                release_requeue(release_id=release.pk, reset_attempts=True)
            except ApplicationError as error:
                self.message_user(request, f"{release}: {error.message}", messages.ERROR)
            else:
                self.message_user(request, f"{release}: sent to a worker to build again.")

    @admin.action(description="Mark the selected building releases failed")
    def mark_failed(self, request, queryset):
        for release in queryset.filter(status=Release.Status.BUILDING):
            release_mark_failed(
                release_id=release.pk, reason=f"Marked failed by {request.user} in the admin."
            )
            self.message_user(request, f"{release}: marked failed; its version will be reused.")

    def has_change_permission(self, request, obj=None):
        # A published release never changes; notes may be fixed while it is still building.
        if obj is not None and obj.status == Release.Status.PUBLISHED:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return False

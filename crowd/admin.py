"""Crowd studies in the Django admin: read mostly. Studies are created and edited on the
project's Crowd tab (its checks and stage preparation live in crowd.services); participants
change only through the services (entry, refresh, leave, sync)."""

from django.contrib import admin

from annotation.admin import EngineAdmin
from crowd.models import BonusPayment, Participant, Study


@admin.register(Study)
class StudyAdmin(EngineAdmin):
    list_display = ["name", "project", "stage", "platform", "places", "quota", "is_open"]
    list_filter = ["platform", "is_open", "project"]
    search_fields = ["name", "token", "platform_study_id"]

    def has_add_permission(self, request):
        return False

    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in Study._meta.fields]


@admin.register(Participant)
class ParticipantAdmin(EngineAdmin):
    list_display = ["pk", "study", "status", "platform_status", "started_at", "finished_at"]
    list_filter = ["status", "study"]
    search_fields = ["platform_id", "session_id"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(BonusPayment)
class BonusPaymentAdmin(EngineAdmin):
    """Bonus payments are made on the study page and sent by crowd.tasks.pay_bonus: read only."""

    list_display = ["pk", "study", "status", "total", "prolific_id", "attempts", "created_at"]
    list_filter = ["status", "study"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

from __future__ import annotations

from django.contrib import admin

from annotation.admin import EngineAdmin
from sso.models import DomainMembership


@admin.register(DomainMembership)
class DomainMembershipAdmin(EngineAdmin):
    list_display = ("domain", "role", "project", "created_at")
    list_filter = ("role", "project")
    search_fields = ("domain", "project__name", "project__slug")

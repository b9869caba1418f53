from django.contrib import admin

from annotation.admin import EngineAdmin
from webhooks.models import Webhook, WebhookDelivery


@admin.register(Webhook)
class WebhookAdmin(EngineAdmin):
    list_display = ("name", "project", "url", "is_active", "consecutive_failures")
    list_filter = ("is_active",)
    exclude = ("secret",)  # shown once to its creator, never again


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(EngineAdmin):
    list_display = ("hook", "started_at", "outcome", "status_code", "response_ms", "attempt")
    list_filter = ("outcome", "is_test")

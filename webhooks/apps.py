from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    """Webhooks: a project's URLs hear its events (imports, decisions, adjudication, completed
    stages, releases, crowd sessions, model runs) as signed JSON, delivered by Celery from an
    outbox written in the work's transaction (webhooks/README.md)."""

    name = "webhooks"
    verbose_name = "Webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.access import MANAGE
        from annotation.navigation import ProjectTab
        from annotation.plugins import Plugin, register_plugin
        from webhooks.demo import seed
        from webhooks.outbox import (
            item_stage_decided_listener,
            item_stages_resolved_listener,
            project_event_listener,
        )

        register_plugin(
            Plugin(
                name=self.name,
                project_tabs=[ProjectTab("Webhooks", "webhooks:hooks", MANAGE, order=95)],
                on_item_stage_decided=[item_stage_decided_listener],
                on_item_stages_resolved=[item_stages_resolved_listener],
                on_project_event=[project_event_listener],
                demo=seed,
            )
        )

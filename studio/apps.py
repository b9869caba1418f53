from django.apps import AppConfig


class StudioConfig(AppConfig):
    """Setting a study up in the app, without the Django admin: a project from a workflow's
    template, its pipeline edited through the services' own checks, members and invite links."""

    name = "studio"
    verbose_name = "Project setup"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.access import MANAGE
        from annotation.models import Role
        from annotation.navigation import ProjectTab
        from annotation.plugins import Plugin, register_plugin

        items_roles = (Role.ADMIN, Role.RESEARCHER, Role.REVIEWER)
        register_plugin(
            Plugin(
                name=self.name,
                project_tabs=[
                    ProjectTab("Setup", "studio:setup", MANAGE, order=80),
                    ProjectTab("Items", "studio:items", items_roles, order=20),
                ],
            )
        )

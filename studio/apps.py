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
        from annotation.navigation import register_project_tab

        register_project_tab("Setup", "studio:setup", roles=MANAGE, order=80)
        register_project_tab(
            "Items", "studio:items", roles=(Role.ADMIN, Role.RESEARCHER, Role.REVIEWER), order=20
        )

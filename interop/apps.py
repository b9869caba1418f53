from django.apps import AppConfig


class InteropConfig(AppConfig):
    """Interop: coming from Label Studio and Potato — their exports imported into a project
    (items, and past answers as historic work by pseudonymous raters), and a project exported
    as Label Studio tasks (interop/README.md)."""

    name = "interop"
    verbose_name = "Interop (Label Studio, Potato)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.plugins import Plugin, register_plugin
        from interop.demo import seed

        register_plugin(Plugin(name=self.name, demo=seed))

from django.apps import AppConfig


class ImportsConfig(AppConfig):
    """Import batches: readers, declared row schemas, the two-pass pipeline, progress pages.
    Applies the plug-ins' ``import_schemas`` and ``item_mappers`` (annotation/plugins.py)."""

    name = "imports"
    verbose_name = "Imports"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.access import MANAGE
        from annotation.navigation import ProjectTab
        from annotation.plugins import Plugin, extension_point, register_plugin
        from imports import services
        from imports.core import schema

        extension_point("import_schemas", schema.register_schema, registry=schema.SCHEMAS)
        extension_point(
            "item_mappers", services.register_item_mapper, registry=services.ITEM_MAPPERS
        )
        register_plugin(
            Plugin(
                name=self.name,
                project_tabs=[ProjectTab("Imports", "imports:imports", MANAGE, order=60)],
            )
        )

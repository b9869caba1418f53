from django.apps import AppConfig


class ReleasesConfig(AppConfig):
    """Versioned, checksummed releases: writers, the COPY export, datasheets, benchmark layouts.
    Applies the plug-ins' ``release_layouts``, ``release_identities`` and ``release_datasets``
    (annotation/plugins.py)."""

    name = "releases"
    verbose_name = "Releases"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.access import MONITOR
        from annotation.navigation import ProjectTab
        from annotation.plugins import Plugin, extension_point, register_plugin
        from releases import hf_dataset, identities, layouts

        extension_point("release_layouts", layouts.register_layout, registry=layouts.LAYOUTS)
        extension_point(
            "release_identities", identities.register_identities, registry=identities.RULES
        )
        extension_point(
            "release_datasets",
            hf_dataset.register_dataset_layout,
            registry=hf_dataset.DATASET_LAYOUTS,
        )
        register_plugin(
            Plugin(
                name=self.name,
                project_tabs=[ProjectTab("Releases", "releases:releases", MONITOR, order=70)],
            )
        )

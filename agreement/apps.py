from django.apps import AppConfig


class AgreementConfig(AppConfig):
    """Agreement statistics, their snapshots over time, the researchers' dashboards and the
    adjudication queue. Listens to the engine's resolutions to keep the figures fresh, and
    applies the plug-ins' ``headline_providers`` (annotation/plugins.py)."""

    name = "agreement"
    verbose_name = "Agreement and dashboards"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agreement import headlines, sections, services
        from agreement.aggregation import policies as aggregation_policies
        from agreement.aggregation import section as aggregation_section
        from annotation.access import ADJUDICATE, MONITOR
        from annotation.navigation import ProjectTab
        from annotation.plugins import Plugin, extension_point, register_plugin

        extension_point(
            "headline_providers",
            headlines.register_headline_provider,
            registry=headlines._providers,
        )
        extension_point(
            "stage_sections", sections.register_stage_section, registry=sections._sections
        )
        register_plugin(
            Plugin(
                name=self.name,
                project_tabs=[
                    ProjectTab("Agreement", "agreement:dashboard", MONITOR, order=30),
                    ProjectTab("Adjudication", "agreement:adjudication", ADJUDICATE, order=40),
                ],
                on_item_stages_resolved=[services.stages_agreement_changed],
                # Annotator models (agreement/aggregation): their policies and page section.
                policies=aggregation_policies.MODEL_POLICIES,
                stage_sections=[aggregation_section.stage_section()],
            )
        )

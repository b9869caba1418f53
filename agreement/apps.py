from django.apps import AppConfig


class AgreementConfig(AppConfig):
    """Agreement statistics, their snapshots over time, the researchers' dashboards and the
    adjudication queue. Listens to the engine's resolutions to keep the figures fresh."""

    name = "agreement"
    verbose_name = "Agreement and dashboards"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agreement import services
        from annotation.events import on_item_stages_resolved

        on_item_stages_resolved(services.stages_agreement_changed)

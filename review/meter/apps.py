from __future__ import annotations

from django.apps import AppConfig

DEMO_SLUG = "meter-demo"


class MeterConfig(AppConfig):
    """METER as a plug-in of the engine: cause–effect pairs verified, generated entries imported,
    then check → edit → vote and a five-criteria filter (review/README.md, "METER"). Everything
    it adds is one ``Plugin`` (annotation/plugins.py) registered in ``ready()``; the engine
    imports nothing from this app. It has no models (it keeps everything in the engine's
    tables), so no migrations."""

    name = "review.meter"
    label = "meter"
    verbose_name = "METER (verify / edit / filter)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.navigation import ProjectTab
        from annotation.plugins import Plugin, register_plugin
        from annotation.workflows import Workflow
        from review.meter import decontamination, generation, kinds, policies, services
        from review.meter.release_layout import METER_DATASET, meter_layout
        from review.meter.release_scorer import MeterScorer

        register_plugin(
            Plugin(
                name=self.name,
                kinds=[
                    kinds.MeterVerifyKind(),
                    kinds.MeterEditKind(),
                    kinds.MeterFilterKind(),
                    kinds.MeterAnswerKind(),
                    kinds.MeterSpansKind(),
                    decontamination.MeterDecontaminateKind(),
                ],
                policies=[policies.MeterVotePolicy(), policies.MeterRecordPolicy()],
                workflows=[
                    Workflow(
                        services.WORKFLOW,
                        "Verify / edit / filter (METER-style)",
                        "Cause–effect pairs verified by three, generated questions checked, "
                        "edited and voted on, then filtered on five criteria.",
                        create=services.meter_project_create,
                    )
                ],
                import_schemas={services.WORKFLOW: services.METER_PAIR_SCHEMA},
                item_mappers={services.WORKFLOW: services.pair_item_mapper},
                release_layouts={services.WORKFLOW: meter_layout},
                release_datasets={services.WORKFLOW: METER_DATASET},
                model_generators=[generation.MeterEntriesGenerator()],
                release_scorers={services.WORKFLOW: MeterScorer()},
                project_tabs=[
                    ProjectTab(
                        "METER",
                        "meter:meter",
                        ("admin", "researcher"),
                        order=35,
                        kinds=(services.WORKFLOW,),
                    )
                ],
                demo=self.demo_seed,
            )
        )

    def demo_seed(self, *, users: dict) -> None:
        """The METER demo project (review.meter.demo), created once."""
        from review.meter.demo import seed

        seed(users=users, slug=DEMO_SLUG)

from __future__ import annotations

from django.apps import AppConfig

DEMO_SLUG = "meter-demo"


class MeterConfig(AppConfig):
    """METER as a plug-in of the engine: cause–effect pairs verified, generated entries imported,
    then check → edit → vote and a five-criteria filter (review/README.md, "METER"). Everything
    is registered here; the engine imports nothing from this app. It has no models (it keeps
    everything in the engine's tables), so no migrations."""

    name = "review.meter"
    label = "meter"
    verbose_name = "METER (verify / edit / filter)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.kinds import register_kind
        from annotation.navigation import register_project_tab
        from annotation.policies import register_policy
        from annotation.workflows import Workflow, register_workflow
        from imports.core.schema import register_schema
        from imports.services import register_item_mapper
        from releases.layouts import register_layout
        from review.meter import kinds, policies, services
        from review.meter.release_layout import meter_layout

        for kind in (
            kinds.MeterVerifyKind(),
            kinds.MeterEditKind(),
            kinds.MeterFilterKind(),
            kinds.MeterAnswerKind(),
            kinds.MeterSpansKind(),
        ):
            register_kind(kind)
        register_policy(policies.MeterVotePolicy())
        register_policy(policies.MeterRecordPolicy())
        register_workflow(
            Workflow(
                services.WORKFLOW,
                "Verify / edit / filter (METER-style)",
                "Cause–effect pairs verified by three, generated questions checked, edited and "
                "voted on, then filtered on five criteria.",
                create=services.meter_project_create,
            )
        )
        register_schema(services.WORKFLOW, services.METER_PAIR_SCHEMA)
        register_item_mapper(services.WORKFLOW, services.pair_item_mapper)
        register_layout(services.WORKFLOW, meter_layout)
        register_project_tab(
            "METER",
            "meter:meter",
            roles=("admin", "researcher"),
            order=35,
            kinds=(services.WORKFLOW,),
        )

    def seed_demo(self, *, users: dict) -> None:
        """The METER demo project (review.meter.demo)."""
        from review.meter.demo import seed

        seed(users=users, slug=DEMO_SLUG)

from __future__ import annotations

from django.apps import AppConfig

METER_DEMO_SLUG = "meter-demo"
CAUSALT5K_DEMO_SLUG = "causalt5k-demo"


class ReviewConfig(AppConfig):
    """Review workflows as plug-ins of the engine: METER's verify → check/edit/vote → filter
    (``review.meter``) and CausalT5k's validation pipeline (``review.causalt5k``). Each declares
    one ``Plugin`` (annotation/plugins.py); the engine imports nothing from this app."""

    name = "review"
    verbose_name = "Review workflows (METER-style, CausalT5k-style)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.navigation import ProjectTab
        from annotation.plugins import Plugin, register_plugin
        from annotation.workflows import Workflow
        from review.causalt5k import kinds as ct5k_kinds
        from review.causalt5k import pipeline as ct5k_pipeline
        from review.causalt5k import policies as ct5k_policies
        from review.causalt5k import release_layout as ct5k_release
        from review.causalt5k import services as ct5k
        from review.meter import kinds, policies, services
        from review.meter.release_layout import meter_layout

        monitor = ("admin", "researcher")
        register_plugin(
            Plugin(
                name="review.meter",
                kinds=[
                    kinds.MeterVerifyKind(),
                    kinds.MeterEditKind(),
                    kinds.MeterFilterKind(),
                    kinds.MeterAnswerKind(),
                    kinds.MeterSpansKind(),
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
                project_tabs=[
                    ProjectTab(
                        "METER", "review:meter", monitor, order=35, kinds=(services.WORKFLOW,)
                    )
                ],
                demo=self.meter_demo_seed,
            )
        )
        register_plugin(
            Plugin(
                name="review.causalt5k",
                kinds=[
                    ct5k_kinds.CT5kClusterKind(),
                    ct5k_kinds.CT5kReviewKind(),
                    ct5k_kinds.CT5kAuthorKind(),
                    ct5k_kinds.CT5kScoreKind(),
                    ct5k_kinds.CT5kAnswerKind(),
                    ct5k_kinds.CT5kPressureKind(),
                    ct5k_kinds.CT5kPressureCheckKind(),
                ],
                policies=[
                    ct5k_policies.CT5kReviewPolicy(),
                    ct5k_policies.CT5kAuthorPolicy(),
                    ct5k_policies.CT5kGatePolicy(),
                    ct5k_policies.CT5kAnswersPolicy(),
                    ct5k_policies.CT5kPressurePolicy(),
                    ct5k_policies.CT5kPressureCheckPolicy(),
                ],
                eligibility_rules=[ct5k_pipeline.AuthorIfKnown()],
                workflows=[
                    Workflow(
                        ct5k.WORKFLOW,
                        "Causal cases across three rungs (CausalT5k-style)",
                        "Scenario + claim cases at Pearl levels 1–3, imported from a release and "
                        "normalised; near-duplicate queue, adversarial review and a composite "
                        "quality score with a gate.",
                    )
                ],
                item_mappers={ct5k.WORKFLOW: ct5k.case_item_mapper},
                release_layouts={ct5k.WORKFLOW: ct5k_release.causalt5k_layout},
                release_identities={ct5k.WORKFLOW: ct5k_release.IDENTITIES},
                project_tabs=[
                    ProjectTab(
                        "CausalT5k", "causalt5k:report", monitor, order=35, kinds=(ct5k.WORKFLOW,)
                    )
                ],
                on_item_stage_decided=[ct5k_pipeline.cluster_decided],
                demo=self.causalt5k_demo_seed,
            )
        )

    def meter_demo_seed(self, *, users: dict) -> None:
        """The METER demo project (review.meter.demo)."""
        from review.meter.demo import seed

        seed(users=users, slug=METER_DEMO_SLUG)

    def causalt5k_demo_seed(self, *, users: dict) -> None:
        """The CausalT5k demo project (review.causalt5k.demo)."""
        from review.causalt5k.demo import seed

        seed(users=users, slug=CAUSALT5K_DEMO_SLUG)

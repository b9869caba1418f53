from __future__ import annotations

from django.apps import AppConfig

METER_DEMO_SLUG = "meter-demo"
CAUSALT5K_DEMO_SLUG = "causalt5k-demo"


class ReviewConfig(AppConfig):
    """Review workflows as plug-ins of the engine: METER's verify → check/edit/vote → filter
    (``review.meter``). Everything is registered here; the engine imports nothing from this app."""

    name = "review"
    verbose_name = "Review workflows (METER-style)"
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

        self._register_causalt5k()

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
            "review:meter",
            roles=("admin", "researcher"),
            order=35,
            kinds=(services.WORKFLOW,),
        )

    def _register_causalt5k(self) -> None:
        """CausalT5k (review.causalt5k): the workflow, its release layout (the normalisation
        report), the project tab with the report; the validation stages' kinds, policies, the
        author_if_known rule and the near-duplicate listener (review.causalt5k.pipeline)."""
        from annotation.eligibility import register_rule
        from annotation.events import on_item_stage_decided
        from annotation.kinds import register_kind
        from annotation.navigation import register_project_tab
        from annotation.policies import register_policy
        from annotation.workflows import Workflow, register_workflow
        from imports.services import register_item_mapper
        from releases.identities import register_identities
        from releases.layouts import register_layout
        from review.causalt5k import kinds as ct5k_kinds
        from review.causalt5k import pipeline as ct5k_pipeline
        from review.causalt5k import policies as ct5k_policies
        from review.causalt5k import release_layout as ct5k_release
        from review.causalt5k import services as ct5k
        from review.causalt5k.release_layout import causalt5k_layout

        register_workflow(
            Workflow(
                ct5k.WORKFLOW,
                "Causal cases across three rungs (CausalT5k-style)",
                "Scenario + claim cases at Pearl levels 1–3, imported from a release and "
                "normalised; near-duplicate queue, adversarial review and a composite quality "
                "score with a gate.",
            )
        )
        register_layout(ct5k.WORKFLOW, causalt5k_layout)
        register_item_mapper(ct5k.WORKFLOW, ct5k.case_item_mapper)
        register_identities(ct5k.WORKFLOW, ct5k_release.IDENTITIES)
        for kind in (
            ct5k_kinds.CT5kClusterKind(),
            ct5k_kinds.CT5kReviewKind(),
            ct5k_kinds.CT5kAuthorKind(),
            ct5k_kinds.CT5kScoreKind(),
            ct5k_kinds.CT5kAnswerKind(),
            ct5k_kinds.CT5kPressureKind(),
            ct5k_kinds.CT5kPressureCheckKind(),
        ):
            register_kind(kind)
        for policy in (
            ct5k_policies.CT5kReviewPolicy(),
            ct5k_policies.CT5kAuthorPolicy(),
            ct5k_policies.CT5kGatePolicy(),
            ct5k_policies.CT5kAnswersPolicy(),
            ct5k_policies.CT5kPressurePolicy(),
            ct5k_policies.CT5kPressureCheckPolicy(),
        ):
            register_policy(policy)
        register_rule(ct5k_pipeline.AuthorIfKnown())
        on_item_stage_decided(ct5k_pipeline.cluster_decided)
        register_project_tab(
            "CausalT5k",
            "causalt5k:report",
            roles=("admin", "researcher"),
            order=35,
            kinds=(ct5k.WORKFLOW,),
        )

    def seed_demo(self, *, users: dict) -> None:
        """The METER demo project (review.meter.demo) and the CausalT5k one
        (review.causalt5k.demo)."""
        from review.causalt5k.demo import seed as seed_causalt5k
        from review.meter.demo import seed

        seed(users=users, slug=METER_DEMO_SLUG)
        seed_causalt5k(users=users, slug=CAUSALT5K_DEMO_SLUG)

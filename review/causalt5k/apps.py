from __future__ import annotations

from django.apps import AppConfig

DEMO_SLUG = "causalt5k-demo"


class CausalT5kConfig(AppConfig):
    """CausalT5k as a plug-in of the engine: the release imported and normalised, then validated
    (near-duplicate queue, adversarial review, quality gate), blind answers, pressure variants,
    the human floor (review/README.md, "CausalT5k"). Everything it adds is one ``Plugin``
    (annotation/plugins.py) registered in ``ready()``; the engine imports nothing from this app.

    The app label stays ``review``, the label of the one app ``review/`` was before METER and
    CausalT5k became two: CausalT5k's models (``CausalT5kImport``, ``CausalT5kDuplicate``) and
    their migrations (``review/causalt5k/migrations``, found through this app's ``name``) are
    recorded under it in existing databases — the tables ``review_causalt5kimport`` and
    ``review_causalt5kduplicate``, the rows of ``django_migrations``, the content types and
    their permissions. Keeping the label leaves every one of them as it is, with no migration
    to write or run; renaming it would move all four for no change in behaviour. Migration 0004
    also gives METER's blind answer stage its rule: it ran once, under this label, and stays in
    its history.

    Uses ``review.meter``'s stylesheet and edit-diff script on its item screens and its demo's
    ``drive`` helper, so both apps are installed together."""

    name = "review.causalt5k"
    label = "review"
    verbose_name = "CausalT5k (validation of causal cases)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.navigation import ProjectTab
        from annotation.plugins import Plugin, register_plugin
        from annotation.workflows import Workflow
        from review.causalt5k import expansion, kinds, pipeline, policies, release_layout, services
        from review.causalt5k.normalise import RECORD_KIND, RECORD_SCHEMA
        from review.causalt5k.release_scorer import CausalT5kScorer
        from review.causalt5k.schema import CASES_SCHEMA

        register_plugin(
            Plugin(
                name=self.name,
                kinds=[
                    kinds.CT5kClusterKind(),
                    kinds.CT5kReviewKind(),
                    kinds.CT5kAuthorKind(),
                    kinds.CT5kScoreKind(),
                    kinds.CT5kAnswerKind(),
                    kinds.CT5kPressureKind(),
                    kinds.CT5kPressureCheckKind(),
                ],
                policies=[
                    policies.CT5kReviewPolicy(),
                    policies.CT5kAuthorPolicy(),
                    policies.CT5kGatePolicy(),
                    policies.CT5kAnswersPolicy(),
                    policies.CT5kPressurePolicy(),
                    policies.CT5kPressureCheckPolicy(),
                ],
                eligibility_rules=[pipeline.AuthorIfKnown()],
                workflows=[
                    Workflow(
                        services.WORKFLOW,
                        "Causal cases across three rungs (CausalT5k-style)",
                        "Scenario + claim cases at Pearl levels 1–3: near-duplicate queue, "
                        "adversarial review, a composite quality score with a gate, blind "
                        "answers and pressure variants.",
                        create=services.causalt5k_project_create,
                        open_items=services.imported_cases_open,
                    )
                ],
                import_schemas={
                    services.WORKFLOW: CASES_SCHEMA,
                    RECORD_KIND: RECORD_SCHEMA,
                },
                item_mappers={services.WORKFLOW: services.case_item_mapper},
                release_layouts={services.WORKFLOW: release_layout.causalt5k_layout},
                release_datasets={services.WORKFLOW: release_layout.CAUSALT5K_DATASET},
                model_generators=[expansion.CausalT5kExpansionGenerator()],
                release_identities={services.WORKFLOW: release_layout.IDENTITIES},
                release_scorers={services.WORKFLOW: CausalT5kScorer()},
                project_tabs=[
                    ProjectTab(
                        "CausalT5k",
                        "causalt5k:report",
                        ("admin", "researcher"),
                        order=35,
                        kinds=(services.WORKFLOW,),
                    )
                ],
                on_item_stage_decided=[pipeline.cluster_decided],
                demo=self.demo_seed,
            )
        )

    def demo_seed(self, *, users: dict) -> None:
        """The CausalT5k demo project (review.causalt5k.demo), created once."""
        from review.causalt5k.demo import seed

        seed(users=users, slug=DEMO_SLUG)

from __future__ import annotations

from django.apps import AppConfig

NARRATIVES_DEMO_SLUG = "narratives-demo"


class NarrativesConfig(AppConfig):
    """Causal-chain reconstruction (CausalNarratives) as a plug-in of the engine: the import of
    narrative files and narrative graphs, the ``causal_order`` kind, the ``narrative_record``
    policy, the workflow with its template, the benchmark's release layout and the Narratives
    tab. Everything is registered here; the engine imports nothing from this app."""

    name = "narratives"
    verbose_name = "Causal narratives (CausalNarratives)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.kinds import register_kind
        from annotation.navigation import register_project_tab
        from annotation.policies import register_policy
        from annotation.workflows import Workflow, register_workflow
        from narratives import kinds, policies, services
        from narratives.release_layout import narratives_layout
        from releases.layouts import register_layout

        register_kind(kinds.CausalOrderKind())
        register_policy(policies.NarrativeRecordPolicy())
        register_workflow(
            Workflow(
                services.WORKFLOW,
                "Causal narratives (CausalNarratives-style)",
                "Annotators read a short narrative and rebuild its causal chain by ordering event "
                "cards (or draw a graph's edges); scored against the true structure (exact "
                "order, Kendall's τ, edge precision / recall, SHD).",
                create=services.narratives_project_create,
            )
        )
        register_layout(services.WORKFLOW, narratives_layout)
        register_project_tab(
            "Narratives",
            "narratives:baseline",
            roles=("admin", "researcher"),
            order=35,
            kinds=(services.WORKFLOW,),
        )

    def seed_demo(self, *, users: dict) -> None:
        from narratives.demo import seed

        seed(users=users, slug=NARRATIVES_DEMO_SLUG)

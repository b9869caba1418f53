from __future__ import annotations

from django.apps import AppConfig

CARLGT_DEMO_SLUG = "carlgt-demo"


class GraphsConfig(AppConfig):
    """Causal-graph questions as a plug-in of the engine (CARL-GT): the benchmark's import,
    d-separation questions generated from a DAG, the ``graph_question`` kind, the
    ``graph_record`` policy, the workflow with its template and the Graphs tab. Everything is
    registered here; the engine imports nothing from this app."""

    name = "graphs"
    verbose_name = "Causal-graph questions (CARL-GT)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.kinds import register_kind
        from annotation.navigation import register_project_tab
        from annotation.policies import register_policy
        from annotation.workflows import Workflow, register_workflow
        from graphs import kinds, policies, services
        from graphs.release_layout import carlgt_layout
        from releases.layouts import register_layout

        register_kind(kinds.GraphQuestionKind())
        register_policy(policies.GraphRecordPolicy())
        register_workflow(
            Workflow(
                services.WORKFLOW,
                "Causal-graph questions (CARL-GT-style)",
                "d-separation, independence, causal direction (yes / no) and intervention or "
                "counterfactual expectations (numbers), answered by people and scored like the "
                "paper scores models.",
                create=services.carlgt_project_create,
            )
        )
        register_layout(services.WORKFLOW, carlgt_layout)
        register_project_tab(
            "Graphs",
            "graphs:scores",
            roles=("admin", "researcher"),
            order=35,
            kinds=(services.WORKFLOW,),
        )

    def seed_demo(self, *, users: dict) -> None:
        from graphs.demo import seed

        seed(users=users, slug=CARLGT_DEMO_SLUG)

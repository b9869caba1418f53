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
        from annotation.navigation import ProjectTab
        from annotation.plugins import Plugin, register_plugin
        from annotation.workflows import Workflow
        from graphs import carlgt, dsep, kinds, policies, services
        from graphs.release_layout import CARLGT_DATASET, carlgt_layout
        from graphs.release_scorer import CarlGTScorer

        register_plugin(
            Plugin(
                name=self.name,
                kinds=[kinds.GraphQuestionKind()],
                policies=[policies.GraphRecordPolicy()],
                workflows=[
                    Workflow(
                        services.WORKFLOW,
                        "Causal-graph questions (CARL-GT-style)",
                        "d-separation, independence, causal direction (yes / no) and "
                        "intervention or counterfactual expectations (numbers), answered by "
                        "people and scored like the paper scores models.",
                        create=services.carlgt_project_create,
                        import_pages=(("questions", "graphs:import"),),
                    )
                ],
                # A CARL-GT question with its answer (carlgt.py: the benchmark's line pairs and the
                # Import page's rows), an edge-list row (dsep.py).
                import_schemas={**carlgt.SCHEMAS, dsep.EDGE_SCHEMA.name: dsep.EDGE_SCHEMA},
                release_layouts={services.WORKFLOW: carlgt_layout},
                release_datasets={services.WORKFLOW: CARLGT_DATASET},
                release_scorers={services.WORKFLOW: CarlGTScorer()},
                project_tabs=[
                    ProjectTab(
                        "Graphs",
                        "graphs:scores",
                        ("admin", "researcher"),
                        order=35,
                        kinds=(services.WORKFLOW,),
                    )
                ],
                demo=self.demo_seed,
            )
        )

    def demo_seed(self, *, users: dict) -> None:
        from graphs.demo import seed

        seed(users=users, slug=CARLGT_DEMO_SLUG)

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
        from annotation.navigation import ProjectTab
        from annotation.plugins import Plugin, register_plugin
        from annotation.workflows import Workflow
        from narratives import kinds, policies, services
        from narratives.reader import NARRATIVE_SCHEMA
        from narratives.release_layout import NARRATIVES_DATASET, narratives_layout
        from narratives.release_scorer import NarrativesScorer

        register_plugin(
            Plugin(
                name=self.name,
                kinds=[kinds.CausalOrderKind()],
                policies=[policies.NarrativeRecordPolicy()],
                workflows=[
                    Workflow(
                        services.WORKFLOW,
                        "Causal narratives (CausalNarratives-style)",
                        "Annotators read a short narrative and rebuild its causal chain by "
                        "ordering event cards (or draw a graph's edges); scored against the true "
                        "structure (exact order, Kendall's τ, edge precision / recall, SHD).",
                        create=services.narratives_project_create,
                        import_pages=(("narrative files", "narratives:import"),),
                    )
                ],
                # One line of a narratives file (narratives/reader.py).
                import_schemas={NARRATIVE_SCHEMA.name: NARRATIVE_SCHEMA},
                release_layouts={services.WORKFLOW: narratives_layout},
                release_datasets={services.WORKFLOW: NARRATIVES_DATASET},
                release_scorers={services.WORKFLOW: NarrativesScorer()},
                project_tabs=[
                    ProjectTab(
                        "Narratives",
                        "narratives:baseline",
                        ("admin", "researcher"),
                        order=35,
                        kinds=(services.WORKFLOW,),
                    )
                ],
                demo=self.demo_seed,
            )
        )

    def demo_seed(self, *, users: dict) -> None:
        from narratives.demo import seed

        seed(users=users, slug=NARRATIVES_DEMO_SLUG)

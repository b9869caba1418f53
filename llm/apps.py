from __future__ import annotations

from django.apps import AppConfig


class LlmConfig(AppConfig):
    """Models in the loop, as a plug-in of the engine: endpoints, versioned prompts, model raters
    working through the engine's next/submit services, runs as jobs with a ledger of calls,
    calibration against people and evaluation of releases (llm/README.md). Everything it adds
    to the engine is one ``Plugin`` (annotation/plugins.py) registered in ``ready()``."""

    name = "llm"
    verbose_name = "Models in the loop"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.access import MONITOR
        from annotation.navigation import ProjectTab
        from annotation.plugins import Plugin, extension_point, register_plugin
        from llm import calibration, eligibility, generation, judges
        from llm.clone import project_setup_clone
        from llm.evaluation.scoring import SCORERS, register_scorer

        # The workflows' release scorers (llm/evaluation/scoring.py), applied here.
        extension_point("release_scorers", register_scorer, registry=SCORERS)
        import llm.evaluation.tasks  # noqa: F401 -- registers the evaluation's Celery task

        extension_point(
            "model_generators", generation.register_generator, registry=generation.GENERATORS
        )
        register_plugin(
            Plugin(
                name=self.name,
                eligibility_rules=[eligibility.ModelSlots()],
                policies=[judges.ModelUnanimityPolicy()],
                advisory_raters=[eligibility.advisory_raters],
                stage_sections=[calibration.stage_section()],
                # The Models tab (llm/views.py) and the Evaluations tab (llm/evaluation/views.py):
                # researchers read them, admins write; every kind.
                project_tabs=[
                    ProjectTab("Evaluations", "llm-evaluation:evaluations", MONITOR, order=70),
                    ProjectTab("Models", "llm:models", MONITOR, order=75),
                ],
                demo=self.demo_seed,
                # Cloning a project's setup copies its prompts and model raters (llm/clone.py).
                clone=project_setup_clone,
            )
        )

    def demo_seed(self, *, users: dict) -> None:
        """The demo endpoint (llm/demo_responder.py) and the model steps of the demo projects."""
        from llm.demo import seed

        seed(users=users)

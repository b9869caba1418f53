from __future__ import annotations

from django.apps import AppConfig


class QualityConfig(AppConfig):
    """Per-annotator quality and automatic actions, as a plug-in of the engine
    (quality/README.md): gold accuracy with intervals, times, straight-lining and spread flags
    per stage, thresholds that pause people (or screen out study participants) with an undo and
    an optional withdrawal. Everything it adds to the engine is one ``Plugin``
    (annotation/plugins.py) registered in ``ready()``: an annotator gate, the item screen's
    message for a paused person (a progress cap and a pending-work message), and a section of each stage's Agreement page."""

    name = "quality"
    verbose_name = "Annotator quality"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.plugins import Plugin, register_plugin
        from quality import gate, section

        register_plugin(
            Plugin(
                name=self.name,
                annotator_gates=[gate.QualityGate()],
                progress_caps=[gate.paused_cap],
                work_pending=[gate.paused_message],
                stage_sections=[section.stage_section()],
                demo=self.demo_seed,
            )
        )

    def demo_seed(self, *, users: dict) -> None:
        """The gold-checks study (quality/demo.py)."""
        from quality.demo import seed

        seed(users=users)

from django.apps import AppConfig


class CrowdConfig(AppConfig):
    """Crowd entry: studies on Prolific, MTurk or a plain link, participants without passwords,
    consent → instructions → practice → their quota of items on the normal item screen."""

    name = "crowd"
    verbose_name = "Crowd studies"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.access import MANAGE
        from annotation.navigation import ProjectTab
        from annotation.plugins import Plugin, register_plugin
        from crowd.demo import seed
        from crowd.eligibility import CrowdParticipantRule
        from crowd.gate import (
            CrowdGate,
            crowd_participant_view,
            crowd_progress_cap,
            crowd_work_gate,
            crowd_work_pending,
        )

        register_plugin(
            Plugin(
                name=self.name,
                eligibility_rules=[CrowdParticipantRule()],
                annotator_gates=[CrowdGate()],
                work_gates=[crowd_work_gate],
                progress_caps=[crowd_progress_cap],
                work_pending=[crowd_work_pending],
                participant_views=[crowd_participant_view],
                project_tabs=[ProjectTab("Crowd", "crowd:studies", MANAGE, order=85)],
                demo=seed,
            )
        )

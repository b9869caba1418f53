from django.apps import AppConfig


class CrowdConfig(AppConfig):
    """Crowd entry: studies on Prolific, MTurk or a plain link, participants without passwords,
    consent → instructions → practice → their quota of items on the normal item screen."""

    name = "crowd"
    verbose_name = "Crowd studies"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.access import MANAGE
        from annotation.eligibility import register_rule
        from annotation.gates import register_annotator_gate
        from annotation.navigation import (
            register_progress_cap,
            register_project_tab,
            register_work_gate,
            register_work_pending,
        )
        from crowd.eligibility import CrowdParticipantRule
        from crowd.gate import (
            CrowdGate,
            crowd_progress_cap,
            crowd_work_gate,
            crowd_work_pending,
        )

        register_rule(CrowdParticipantRule())
        register_annotator_gate(CrowdGate())
        register_work_gate(crowd_work_gate)
        register_progress_cap(crowd_progress_cap)
        register_work_pending(crowd_work_pending)
        register_project_tab("Crowd", "crowd:studies", roles=MANAGE, order=85)

    def seed_demo(self, *, users) -> None:
        from crowd.demo import seed

        seed(users=users)

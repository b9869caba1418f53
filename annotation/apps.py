from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    """The engine. It declares its own kinds, policies, rules, workflow, Overview tab and demo
    through the same plug-in interface as every other app (annotation/plugins.py)."""

    name = "annotation"
    verbose_name = "Annotation engine"

    def ready(self) -> None:
        from annotation.access import ANY_ROLE
        from annotation.demo import engine_demo_seed
        from annotation.eligibility import BUILT_IN_RULES
        from annotation.kinds.simple import LabelKind, VerifyKind
        from annotation.navigation import ProjectTab
        from annotation.plugins import Plugin, register_plugin
        from annotation.policies import BUILT_IN_POLICIES
        from annotation.workflows import GENERIC, VERIFY_LABEL

        register_plugin(
            Plugin(
                name=self.name,
                kinds=[VerifyKind(), LabelKind()],
                policies=BUILT_IN_POLICIES,
                eligibility_rules=BUILT_IN_RULES,
                workflows=[GENERIC, VERIFY_LABEL],
                project_tabs=[ProjectTab("Overview", "annotation:project", ANY_ROLE, order=10)],
                demo=engine_demo_seed,
            )
        )

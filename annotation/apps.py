from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation engine"

    def ready(self) -> None:
        from annotation.kinds import register_kind
        from annotation.kinds.simple import LabelKind, VerifyKind

        register_kind(VerifyKind())
        register_kind(LabelKind())

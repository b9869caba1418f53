from django.apps import AppConfig


class ImportsConfig(AppConfig):
    """Import batches: readers, declared row schemas, the two-pass pipeline, progress pages."""

    name = "imports"
    verbose_name = "Imports"
    default_auto_field = "django.db.models.BigAutoField"

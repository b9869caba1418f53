from django.apps import AppConfig


class ReleasesConfig(AppConfig):
    """Versioned, checksummed releases: writers, the COPY export, datasheets, benchmark layouts."""

    name = "releases"
    verbose_name = "Releases"
    default_auto_field = "django.db.models.BigAutoField"

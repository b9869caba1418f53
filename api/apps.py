from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The REST API: views and serializers per resource, token auth, one error format."""

    name = "api"
    verbose_name = "REST API"

from __future__ import annotations

from django.apps import AppConfig


class SsoConfig(AppConfig):
    """Single sign-on with OpenID Connect (sso/README.md): mozilla-django-oidc's code flow with
    a backend that signs people in only by an e-mail address the provider has verified, and
    project memberships granted by e-mail domain."""

    name = "sso"
    verbose_name = "Single sign-on"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Its one Plugin (annotation/plugins.py), empty: sign-in adds no extension point of the
        # engine; its pages are URLs and its memberships go through annotation.api.
        from annotation.plugins import Plugin, register_plugin

        register_plugin(Plugin(name=self.name))

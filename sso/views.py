"""Sign-in pages: the password form beside the provider's button, and the provider's round
trip (mozilla-django-oidc's views, answering 404 while no provider is configured)."""

from __future__ import annotations

from functools import wraps

from django.contrib.auth import views as auth_views
from django.core.exceptions import SuspiciousOperation
from django.http import Http404
from django.urls import reverse
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from sso import config
from sso.backends import SESSION_ERROR


class SignInView(auth_views.LoginView):
    """Django's sign-in page, which also offers the provider, shows why a provider sign-in was
    refused, and refuses passwords when the operator switched them off."""

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.update(
            sso_enabled=config.enabled(),
            sso_name=config.provider_name(),
            local_passwords=config.local_passwords(),
            sso_error=self.request.session.pop(SESSION_ERROR, ""),
        )
        return context

    def post(self, request, *args, **kwargs):
        if not config.local_passwords():
            context = self.get_context_data(form=self.form_class(request=request))
            context["sso_error"] = (
                f"Password sign-in is switched off here; sign in with {config.provider_name()}."
            )
            return self.render_to_response(context, status=403)
        return super().post(request, *args, **kwargs)


def local_passwords_only(view):
    """Wrap a password page (change, reset): 404 while local passwords are switched off."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not config.local_passwords():
            raise Http404("Password sign-in is switched off.")
        return view(request, *args, **kwargs)

    return wrapped


class _ConfiguredOnly:
    def dispatch(self, request, *args, **kwargs):
        if not config.enabled():
            raise Http404("Single sign-on is not configured.")
        return super().dispatch(request, *args, **kwargs)


class SignInStart(_ConfiguredOnly, OIDCAuthenticationRequestView):
    """Redirect to the provider (state, nonce and PKCE kept in the session)."""


class SignInCallback(_ConfiguredOnly, OIDCAuthenticationCallbackView):
    """The provider sends people back here; on a refusal they land on the sign-in page with the
    reason in words."""

    @property
    def failure_url(self) -> str:
        return reverse("login")

    def login_failure(self):
        if SESSION_ERROR not in self.request.session:
            self.request.session[SESSION_ERROR] = (
                f"Sign-in with {config.provider_name()} did not complete; try again."
            )
        return super().login_failure()

    def get(self, request):
        try:
            return super().get(request)
        except SuspiciousOperation:
            # A stale or forged state, or an id token that failed verification.
            return self.login_failure()

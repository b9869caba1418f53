"""The API token page (CONTRIBUTING.md, "Thin views"): a signed-in person's named tokens
(api/models.py) listed with when they were made, last used and expire; a new one made (its
key shown on the answer to that POST only, never again) and one revoked. Linked from every
page's account menu, beside the API docs."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotation.errors import ApplicationError
from annotation.forms import form_error
from annotation.web import page
from api import forms, selectors, services


def _render(request, *, status: int = 200, **context):
    found = {
        "tokens": selectors.personal_tokens(request.user),
        "max_days": services.MAX_TOKEN_DAYS,
        "posted": request.POST if request.method == "POST" else {},
        **context,
    }
    return render(request, "api/tokens.html", found, status=status)


@require_http_methods(["GET", "POST"])
@page
def tokens(request):
    """GET: the page. POST (``name``, ``days``): a new token, its key on the answer."""
    if request.method == "GET":
        return _render(request)
    form = forms.TokenCreateForm(request.POST)
    try:
        if not form.is_valid():
            raise form_error(form)
        token, key = services.personal_token_create(user=request.user, **form.cleaned_data)
    except ApplicationError as error:
        return _render(request, status=error.status, error=error)
    return _render(request, status=201, created=token, key=key)


@require_POST
@page
def token_revoke(request):
    """Revoke one of the person's tokens (``token``: its id)."""
    form = forms.TokenRevokeForm(request.POST)
    try:
        if not form.is_valid():
            raise form_error(form)
        services.personal_token_revoke(user=request.user, token_id=form.cleaned_data["token"])
    except ApplicationError as error:
        return _render(request, status=error.status, error=error)
    messages.success(request, "Token revoked: requests with its key are refused from now on.")
    return redirect("tokens:tokens")

"""The Webhooks tab (CONTRIBUTING.md, "Thin views"; the project's admins): the hooks, a new one
with its secret shown once, a hook's page with its delivery log, settings, test event and
re-enable."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotation.access import ProjectAccess
from annotation.errors import ApplicationError
from annotation.forms import form_error
from annotation.navigation import project_tabs
from annotation.web import page, page_of
from webhooks import selectors, services
from webhooks.access import access_webhook, access_webhooks_project
from webhooks.forms import WebhookForm
from webhooks.signing import ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER

#: Session key of a new hook's secret, shown once on its page and then forgotten.
NEW_SECRET = "webhooks_new_secret"


def _context(request, access: ProjectAccess, **extra: Any) -> dict[str, Any]:
    return {
        "project": access.project,
        "project_tabs": project_tabs(access.project, access.roles),
        "event_choices": selectors.event_choices(),
        "headers": {"id": ID_HEADER, "timestamp": TIMESTAMP_HEADER, "signature": SIGNATURE_HEADER},
        "disable_after": settings.WEBHOOKS_DISABLE_AFTER_FAILURES,
        "timeout_seconds": settings.WEBHOOKS_TIMEOUT_SECONDS,
        **extra,
    }


@require_http_methods(["GET", "POST"])
@page
def hooks(request, slug: str):
    """The list and the "Add a webhook" form."""
    access = access_webhooks_project(request.user, slug)
    project = access.project
    if request.method == "POST":
        form = WebhookForm(request.POST)
        try:
            if not form.is_valid():
                raise form_error(form)
            hook = services.webhook_create(project=project, by=request.user, **form.settings())
        except ApplicationError as error:
            context = _context(
                request,
                access,
                rows=selectors.project_hooks(project),
                error=error,
                posted=request.POST,
                posted_events=request.POST.getlist("events"),
            )
            return render(request, "webhooks/hooks.html", context, status=error.status)
        request.session[NEW_SECRET] = {"hook": hook.pk, "secret": hook.secret}
        messages.success(request, f"Added the webhook {hook.name}.")
        return redirect("webhooks:hook", slug=project.slug, webhook_id=hook.pk)
    context = _context(request, access, rows=selectors.project_hooks(project))
    return render(request, "webhooks/hooks.html", context)


@require_http_methods(["GET", "POST"])
@page
def hook(request, slug: str, webhook_id: int):
    """A hook's page: state, settings (POST changes them), delivery log; a new hook's secret
    once."""
    access = access_webhooks_project(request.user, slug)
    found = access_webhook(access.project, webhook_id)
    error = None
    status = 200
    if request.method == "POST":
        form = WebhookForm(request.POST)
        try:
            if not form.is_valid():
                raise form_error(form)
            services.webhook_update(hook=found, **form.settings())
        except ApplicationError as refused:
            error, status = refused, refused.status
            found.refresh_from_db()
        else:
            messages.success(request, "Saved the webhook's settings.")
            return redirect("webhooks:hook", slug=slug, webhook_id=found.pk)
    shown = request.session.pop(NEW_SECRET, None) if request.method == "GET" else None
    secret = shown["secret"] if shown and shown.get("hook") == found.pk else None
    context = _context(
        request,
        access,
        row=selectors.hook_row(found),
        deliveries=page_of(request, selectors.hook_deliveries(found), 50),
        secret=secret,
        error=error,
        posted=request.POST if error else None,
        posted_events=request.POST.getlist("events") if error else found.events,
    )
    return render(request, "webhooks/hook.html", context, status=status)


@require_POST
@page
def hook_test(request, slug: str, webhook_id: int):
    access = access_webhooks_project(request.user, slug)
    found = access_webhook(access.project, webhook_id)
    services.webhook_test_request(hook=found)
    messages.success(
        request, "A test event is on its way: its delivery appears in the log below in a moment."
    )
    return redirect("webhooks:hook", slug=slug, webhook_id=found.pk)


@require_POST
@page
def hook_enable(request, slug: str, webhook_id: int):
    access = access_webhooks_project(request.user, slug)
    found = access_webhook(access.project, webhook_id)
    services.webhook_enable(hook=found)
    messages.success(request, "The webhook is on again; waiting events go out now.")
    return redirect("webhooks:hook", slug=slug, webhook_id=found.pk)


@require_POST
@page
def hook_disable(request, slug: str, webhook_id: int):
    access = access_webhooks_project(request.user, slug)
    found = access_webhook(access.project, webhook_id)
    services.webhook_disable(hook=found, reason=f"Switched off by {request.user.get_username()}.")
    messages.success(request, "The webhook is off: no events are recorded for it until it is on.")
    return redirect("webhooks:hook", slug=slug, webhook_id=found.pk)


@require_POST
@page
def hook_delete(request, slug: str, webhook_id: int):
    access = access_webhooks_project(request.user, slug)
    found = access_webhook(access.project, webhook_id)
    name = found.name
    services.webhook_delete(hook=found)
    messages.success(request, f"Deleted the webhook {name}.")
    return redirect("webhooks:hooks", slug=slug)

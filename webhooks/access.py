"""Permission-checked fetches of the Webhooks tab (CONTRIBUTING.md, "Permission-checked
fetches"): a project's admins only; another project's hook id answers as an unknown one."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User

from annotation.access import MANAGE, ProjectAccess, access_project
from annotation.errors import NotFound
from annotation.models import Project
from webhooks.models import Webhook


def access_webhooks_project(user: User | AnonymousUser, slug: str) -> ProjectAccess:
    """The project ``slug`` for its Webhooks tab: its admins only (404 / 403 as
    ``annotation.access.access_project``)."""
    return access_project(user, slug, MANAGE)


def access_webhook(project: Project, webhook_id: int) -> Webhook:
    """A hook of ``project`` (fetched by ``access_webhooks_project``); 404 otherwise."""
    hook = Webhook.objects.filter(project=project, pk=webhook_id).first()
    if hook is None:
        raise NotFound("There is no such webhook in this project.")
    return hook

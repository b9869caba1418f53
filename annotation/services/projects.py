"""A project's own settings (``Project.settings``, a JSON object that workflows keep their
project-wide choices in) written for a plug-in (CONTRIBUTING.md, "Services own the
transaction"): plug-ins never update ``Project`` rows themselves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from annotation.errors import ApplicationError
from annotation.inputs import check_storable
from annotation.models import Project


@transaction.atomic
def project_settings_update(*, project: Project, changes: Mapping[str, Any]) -> Project:
    """Merge ``changes`` into ``project.settings`` (keys given replace the stored ones, the
    others are kept) and return the project as stored; ``project.settings`` is updated too.

    Locking: the project's row is locked while its settings are read and written, so two
    updates of different keys at once both land. ``changes`` must be a mapping of text keys
    to values the database can store (ApplicationError naming ``settings`` otherwise)."""
    if not isinstance(changes, Mapping) or not all(isinstance(key, str) for key in changes):
        raise ApplicationError(
            "Project settings are a mapping of names to values.", {"settings": "mapping"}
        )
    locked = Project.objects.select_for_update().get(pk=project.pk)
    merged = {**(locked.settings or {}), **dict(changes)}
    check_storable(merged, field="settings")
    locked.settings = merged
    locked.save(update_fields=["settings"])
    project.settings = merged
    return locked

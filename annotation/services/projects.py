"""A project's own settings (``Project.settings``, a JSON object that workflows keep their
project-wide choices in), its licence and citation, and whether it is archived, written for a
plug-in (CONTRIBUTING.md, "Services own the transaction"): plug-ins never update ``Project``
rows themselves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from annotation.errors import ApplicationError
from annotation.inputs import check_storable, clean_text
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


@transaction.atomic
def project_publication_update(*, project: Project, license: str, citation: str) -> Project:
    """Set the licence (an SPDX identifier, or "" for none stated) and the citation (BibTeX
    text) a project's releases carry in their datasheet (releases/datasheet.py). Which
    identifiers are offered is the caller's choice; here the texts must be storable and the
    licence at most 100 characters (ApplicationError naming the field otherwise). Returns the
    project as stored; ``project`` is updated too."""
    license = clean_text(license, field="license", max_length=100).strip()
    citation = clean_text(citation, field="citation", max_length=20_000).strip()
    Project.objects.filter(pk=project.pk).update(license=license, citation=citation)
    project.license, project.citation = license, citation
    return project


@transaction.atomic
def project_archive_set(*, project: Project, archived: bool) -> Project:
    """Archive a project (``archived``) or restore it. An archived project is
    ``is_active=False``: it leaves every home list (annotation.selectors.projects_for_user),
    and no new work is handed out in it (annotation.access.access_stage_for_annotator answers
    "closed"); its data, answers and releases stay, and restoring hands out work again.
    Returns the project; ``project`` is updated too."""
    Project.objects.filter(pk=project.pk).update(is_active=not archived)
    project.is_active = not archived
    return project

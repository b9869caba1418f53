"""Permission-checked fetch of a release (see annotation/access.py for the rule)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from annotation.errors import NotFound
from annotation.models import Project
from releases.models import Release


def access_release(user: AbstractBaseUser, project: Project, version: int) -> Release:
    release = Release.objects.filter(project=project, version=version).first()
    if release is None:
        raise NotFound(f"{project.name} has no release v{version}.")
    return release

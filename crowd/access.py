"""Permission-checked fetches of the crowd pages (CONTRIBUTING.md, "Permission-checked
fetches"): a project's admins reach its Crowd tab and studies; a participant reaches the pages
of the study their browser session entered. Unknown ids and other projects' ids answer alike."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.http import HttpRequest

from annotation.access import MANAGE, ProjectAccess, access_project
from annotation.errors import NotFound, PermissionDenied
from annotation.models import Project
from crowd.gate import session_participant
from crowd.models import Participant, Study

#: The one answer to a participant page opened without this study's session.
NO_SESSION = (
    "Your session of this study was not found: open the study again from the link your "
    "platform gave you."
)


def access_crowd_project(user: User | AnonymousUser, slug: str) -> ProjectAccess:
    """The project ``slug`` for its Crowd tab, with the user's roles in it: its admins only
    (404 / 403 as ``annotation.access.access_project``)."""
    return access_project(user, slug, MANAGE)


def access_study(project: Project, study_id: int) -> Study:
    """A study of ``project`` (fetched by ``access_crowd_project``) with its stages; another
    project's study id answers as an unknown one (404)."""
    study = (
        Study.objects.select_related("stage", "practice_stage")
        .filter(project=project, pk=study_id)
        .first()
    )
    if study is None:
        raise NotFound("There is no such study in this project.")
    return study


def access_session_participant(request: HttpRequest, token: str) -> Participant:
    """The participant this browser session entered as, when it is in the study of ``token``;
    PermissionDenied (403, ``NO_SESSION``) otherwise."""
    participant = session_participant(request)
    if participant is None or participant.study.token != token:
        raise PermissionDenied(NO_SESSION)
    return participant

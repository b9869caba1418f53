"""The site navigation: the signed-in user's projects and the role-aware project tabs.

Apps add tabs to a project's navigation through their ``Plugin`` (``annotation.plugins``):

    Plugin(name="myapp", project_tabs=[ProjectTab("Dashboard", "myapp:dashboard", MONITOR, 30)])

A tab is shown when the user holds one of its roles in the project, the project is of one of the
tab's ``kinds`` (workflows; empty: every project) *and* its URL name resolves with the project's
slug as the only argument (so a tab can be registered before its view exists).

Work gates (``register_work_gate``) let a plug-in send an annotator elsewhere instead of the item
screen: the crowd app ends a participant's session when their quota is met (where to go only:
what a governed annotator may write is decided by annotation.gates, inside the services, on
every path); progress caps
(``register_progress_cap``) bound the "left for you" count the item screen shows; pending-work
hooks (``register_work_pending``) tell an annotator who still owes work but got no item this
moment to wait and try again, instead of the end-of-stage screen; participant views
(``register_participant_view``) mark the people who see the work only, no staff chrome.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.urls import NoReverseMatch, reverse
from django.utils.functional import SimpleLazyObject

from annotation.models import Role


@dataclass(frozen=True)
class ProjectTab:
    """A tab of the project navigation (see the module docstring); ``roles`` and ``kinds`` may
    be any iterables of names and are kept as frozensets."""

    label: str
    url_name: str
    roles: Iterable[str]
    order: int = 50
    kinds: Iterable[str] = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "roles", frozenset(self.roles))
        object.__setattr__(self, "kinds", frozenset(self.kinds))


PROJECT_TABS: list[ProjectTab] = []


def register_project_tab(
    label: str,
    url_name: str,
    *,
    roles: Iterable[str],
    order: int = 50,
    kinds: Iterable[str] = (),
) -> None:
    """Add (or replace, by URL name) a tab of the project navigation; ``kinds``: the project
    kinds (workflows) it belongs to, none for every project."""
    PROJECT_TABS[:] = [tab for tab in PROJECT_TABS if tab.url_name != url_name]
    PROJECT_TABS.append(ProjectTab(label, url_name, frozenset(roles), order, frozenset(kinds)))
    PROJECT_TABS.sort(key=lambda tab: (tab.order, tab.label))


def project_tabs(project, roles: Iterable[str]) -> list[dict[str, str]]:
    """The tabs of `project` a user holding `roles` may open, as {"label", "url"}."""
    held = set(roles)
    tabs = []
    for tab in PROJECT_TABS:
        if not held.intersection(tab.roles) or (tab.kinds and project.kind not in tab.kinds):
            continue
        try:
            url = reverse(tab.url_name, args=[project.slug])
        except NoReverseMatch:
            continue
        tabs.append({"label": tab.label, "url": url, "url_name": tab.url_name})
    return tabs


def navigation(request):
    """Context processor: `nav_projects` (the user's ProjectAccess values, from
    annotation.selectors.projects_for_user), evaluated only when a full page renders the nav (htmx
    partials never touch it, so the annotator's hot path pays no query for it)."""

    def load():
        from annotation.selectors import projects_for_user

        if not request.user.is_authenticated:
            return []
        return projects_for_user(request.user)

    return {"nav_projects": SimpleLazyObject(load), "ROLES": Role}


# --- Work gates: plug-ins that send an annotator elsewhere instead of the item screen ---------

#: A gate is called as ``gate(request, stage_id)`` before the item screen shows or hands out an
#: item (GET and POST of the screen, and after each submit or skip) and returns a URL to send
#: the annotator to, or None to carry on. Gates run on the annotator's hot path: return at once
#: (without a query) for people they do not concern, e.g. by a flag in the session.
WorkGate = Callable[[Any, int], "str | None"]
WORK_GATES: list[WorkGate] = []


def register_work_gate(gate: WorkGate) -> WorkGate:
    """Add a work gate (see WORK_GATES); registering the same function twice keeps one."""
    if gate not in WORK_GATES:
        WORK_GATES.append(gate)
    return gate


def work_gate(request, stage_id: int) -> str | None:
    """The first URL a registered gate sends this annotator to, or None."""
    for gate in WORK_GATES:
        url = gate(request, stage_id)
        if url:
            return url
    return None


#: A progress cap is called as ``cap(request, stage)`` when the item screen shows an
#: annotator's progress and returns the most items still left for them in that stage (a crowd
#: participant's quota), or None for no cap. The same cost rule as for gates applies.
ProgressCap = Callable[[Any, Any], "int | None"]
PROGRESS_CAPS: list[ProgressCap] = []


def register_progress_cap(cap: ProgressCap) -> ProgressCap:
    """Add a progress cap (see PROGRESS_CAPS); registering the same function twice keeps one."""
    if cap not in PROGRESS_CAPS:
        PROGRESS_CAPS.append(cap)
    return cap


def items_left(request, stage, left: int) -> int:
    """``left`` (the stage's items left for the annotator) under every registered cap."""
    for cap in PROGRESS_CAPS:
        limit = cap(request, stage)
        if limit is not None:
            left = min(left, max(limit, 0))
    return left


#: A pending-work hook is called as ``hook(request, stage)`` when the item screen has no item
#: for an annotator and would show its end-of-stage screen ("All done"). It returns a message
#: when the annotator still has work to do in that stage although none was handed out this
#: moment (a crowd participant's practice item held by someone else's transaction), so the
#: screen asks them to wait and try again instead; None otherwise. Called only then, never on
#: the way to an item.
WorkPending = Callable[[Any, Any], "str | None"]
WORK_PENDING: list[WorkPending] = []


def register_work_pending(hook: WorkPending) -> WorkPending:
    """Add a pending-work hook (see WORK_PENDING); registering the same function twice keeps one."""
    if hook not in WORK_PENDING:
        WORK_PENDING.append(hook)
    return hook


def work_pending(request, stage) -> str | None:
    """The first message a registered hook gives, or None."""
    for hook in WORK_PENDING:
        message = hook(request, stage)
        if message:
            return message
    return None


#: A participant-view hook is called as ``hook(request)`` by the item screen; True when the
#: request belongs to someone who sees the work only and none of the staff chrome (a crowd
#: participant): no site or project menus, no item ids, no lease times, no links to the
#: project's other pages. The same cost rule as for gates applies.
ParticipantView = Callable[[Any], bool]
PARTICIPANT_VIEWS: list[ParticipantView] = []


def register_participant_view(hook: ParticipantView) -> ParticipantView:
    """Add a participant-view hook (see PARTICIPANT_VIEWS); the same function twice keeps one."""
    if hook not in PARTICIPANT_VIEWS:
        PARTICIPANT_VIEWS.append(hook)
    return hook


def is_participant_view(request) -> bool:
    """Whether a registered hook says this request is a participant's (see PARTICIPANT_VIEWS)."""
    return any(hook(request) for hook in PARTICIPANT_VIEWS)

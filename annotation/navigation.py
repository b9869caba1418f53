"""The site navigation: the signed-in user's projects and the role-aware project tabs.

Other apps add tabs to a project's navigation in their AppConfig.ready():

    from annotation.navigation import register_project_tab
    register_project_tab("Dashboard", "annotation:dashboard", roles=MONITOR, order=30)

A tab is shown when the user holds one of its roles in the project, the project is of one of the
tab's ``kinds`` (workflows; empty: every project) *and* its URL name resolves with the project's
slug as the only argument (so a tab can be registered before its view exists).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.urls import NoReverseMatch, reverse
from django.utils.functional import SimpleLazyObject

from annotation.models import Role


@dataclass(frozen=True)
class ProjectTab:
    label: str
    url_name: str
    roles: frozenset[str]
    order: int = 50
    kinds: frozenset[str] = frozenset()


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
        if not held & tab.roles or (tab.kinds and project.kind not in tab.kinds):
            continue
        try:
            url = reverse(tab.url_name, args=[project.slug])
        except NoReverseMatch:
            continue
        tabs.append({"label": tab.label, "url": url, "url_name": tab.url_name})
    return tabs


def navigation(request):
    """Context processor: `nav_projects`, evaluated only when a full page renders the nav (htmx
    partials never touch it, so the annotator's hot path pays no query for it)."""

    def load():
        from annotation.selectors import projects_for_user

        if not request.user.is_authenticated:
            return []
        return projects_for_user(request.user)

    return {"nav_projects": SimpleLazyObject(load), "ROLES": Role}

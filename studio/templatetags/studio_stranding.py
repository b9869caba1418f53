"""``{% stranding_warnings project %}``: the warning the Setup tab and the Agreement dashboard
show when a stage has items that need more people than can still take them
(annotation.api.stages_stranded), with links to the first few items (their page has the
actions that rescue them). One include line in each page's template; nothing in their views."""

from __future__ import annotations

from typing import Any

from django import template

from annotation.api import stages_stranded

register = template.Library()


@register.inclusion_tag("studio/includes/stranded.html")
def stranding_warnings(project: Any) -> dict[str, Any]:
    return {"project": project, "warnings": stages_stranded(project)}

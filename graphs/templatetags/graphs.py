"""Template helpers of the graph pages: what an annotator may see of an item (the kind's
allow-list and derived fields, annotation.selectors.item_payload_for_annotator)."""

from __future__ import annotations

from django import template

from annotation.api import item_payload_for_annotator

register = template.Library()


@register.simple_tag
def graph_visible(item, stage):
    return item_payload_for_annotator(item, stage)


@register.filter
def score(value, digits=3):
    return "—" if value is None else f"{value:.{int(digits)}f}"

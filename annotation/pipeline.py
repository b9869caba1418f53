"""A project's pipeline as a graph: which stage feeds which, by outcome, with the number of
items that took each edge, drawn as an inline SVG (no JavaScript, no CDN).

The edges come from the stages' routes (annotation.routing.pipeline_edges); the counts from the
stored resolutions (one query; a large project's stored by a Celery task and shown with their
age: annotation/pipeline_counts.py). Stages run left to right in pipeline order; where an edge ends
(finish, keep, discard, escalate) is a small terminal node in the last column; edges that go
back (loops) arc above the boxes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from html import escape

from annotation.models import Project, Stage
from annotation.pipeline_counts import pipeline_counts, pipeline_counts_shown
from annotation.policies import get_policy
from annotation.routing import pipeline_edges

TERMINALS = {
    "finish": "Accepted",
    "keep": "Kept, flagged",
    "discard": "Discarded",
    "escalate": "To a reviewer",
}


@dataclass(frozen=True)
class Edge:
    source: str
    outcome: str
    target: str
    items: int


def project_pipeline(
    project: Project, *, counted: Counter[tuple[str, str]] | None = None
) -> tuple[list[Stage], list[Edge]]:
    """The project's active stages in order and the pipeline's edges with item counts (the
    items resolved in the source stage with the edge's outcome): ``counted`` when given
    ({(stage slug, outcome): items}), else counted now."""
    stages = list(project.stages.filter(is_active=True).order_by("position"))
    outcomes = {}
    for stage in stages:
        try:
            outcomes[stage.pk] = get_policy(stage.resolution_policy).outcomes
        except Exception:  # an unknown policy (its plug-in removed): show the plain outcomes
            outcomes[stage.pk] = ("accept", "reject")
    if counted is None:
        counted = pipeline_counts(project.pk)
    # A route's later branches ("reject (last loop)", "accept (revised)") share their outcome's
    # count, which the resolutions do not split: only the outcome's first edge carries it.
    edges, seen = [], set()
    for source, outcome, target in pipeline_edges(stages, outcomes):
        key = (source, outcome.split(" (")[0])
        edges.append(Edge(source, outcome, target, -1 if key in seen else counted[key]))
        seen.add(key)
    return stages, edges


def project_pipeline_shown(
    project: Project,
) -> tuple[list[Stage], list[Edge], datetime | None]:
    """``project_pipeline`` as the project home shows it: a large project's stored counts and
    when they were counted (annotation/pipeline_counts.py), else counted now (None)."""
    counted, counted_at = pipeline_counts_shown(project)
    stages, edges = project_pipeline(project, counted=counted)
    return stages, edges, counted_at


BOX_W, BOX_H, GAP, TERM_W, TERM_H = 150, 46, 80, 118, 26


def pipeline_svg(stages: list[Stage], edges: list[Edge]) -> str:
    """The graph as an SVG string (escaped text; accessible title and a text alternative in
    each edge's <title>)."""
    column = {stage.slug: index for index, stage in enumerate(stages)}
    names = {stage.slug: stage.name for stage in stages}
    terminals = sorted({edge.target for edge in edges if edge.target in TERMINALS})
    x_terminal = len(stages) * (BOX_W + GAP) + 10
    top = 70
    width = x_terminal + TERM_W + 20
    height = max(top + BOX_H + 16, 20 + len(terminals) * (TERM_H + 14))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="100%" role="img" class="pipeline-graph" aria-labelledby="pipeline-title">'
        '<title id="pipeline-title">The project\'s pipeline: stages and where items go</title>'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="currentColor"/></marker></defs>'
    ]
    centre: dict[str, tuple[float, float, float, float]] = {}
    for slug, index in column.items():
        x = 10 + index * (BOX_W + GAP)
        centre[slug] = (x, top, BOX_W, BOX_H)
        parts.append(
            f'<g class="pipeline-stage"><rect x="{x}" y="{top}" width="{BOX_W}" '
            f'height="{BOX_H}" rx="8"/><text x="{x + BOX_W / 2}" y="{top + BOX_H / 2 + 5}" '
            f'text-anchor="middle">{escape(_short(names[slug], 20))}</text></g>'
        )
    for index, terminal in enumerate(terminals):
        y = 20 + index * (TERM_H + 14)
        centre[terminal] = (x_terminal, y, TERM_W, TERM_H)
        parts.append(
            f'<g class="pipeline-terminal pipeline-{terminal}"><rect x="{x_terminal}" y="{y}" '
            f'width="{TERM_W}" height="{TERM_H}" rx="13"/><text x="{x_terminal + TERM_W / 2}" '
            f'y="{y + TERM_H / 2 + 4}" text-anchor="middle">{TERMINALS[terminal]}</text></g>'
        )
    for number, edge in enumerate(edges):
        if edge.target not in centre or edge.source not in centre:
            continue
        sx, sy, sw, sh = centre[edge.source]
        tx, ty, tw, th = centre[edge.target]
        label = edge.outcome if edge.items < 0 else f"{edge.outcome} · {edge.items}"
        count = "" if edge.items < 0 else f": {edge.items} items"
        if edge.target in column and column[edge.target] <= column[edge.source]:
            # A loop: arc above the boxes, from the source's top to the target's top.
            x1, x2 = sx + sw * 0.65, tx + tw * 0.35
            lift = 42 + 8 * (number % 3)
            path = f"M{x1},{sy} C{x1},{sy - lift} {x2},{ty - lift} {x2},{ty}"
            lx, ly = (x1 + x2) / 2, sy - lift + 12
        elif column.get(edge.source, 0) < len(stages) - 1 and (
            edge.target in TERMINALS or column[edge.target] > column[edge.source] + 1
        ):
            # Skips a column: arc over the boxes in between instead of crossing them.
            x1, x2 = sx + sw * 0.5, tx + (tw * 0.5 if edge.target in column else 0)
            y2 = ty if edge.target in column else ty + th / 2
            lift = 30 + 10 * (number % 3)
            path = f"M{x1},{sy} C{x1},{sy - lift} {x2 - 40},{min(y2, sy) - lift} {x2 - 2},{y2}"
            lx, ly = x1 + 50, sy - lift + 2
        else:
            x1, y1 = sx + sw, sy + sh / 2
            x2, y2 = tx, ty + th / 2
            middle = (x1 + x2) / 2
            path = f"M{x1},{y1} C{middle},{y1} {middle},{y2} {x2 - 2},{y2}"
            # Labels near the source, so that two edges into one column do not overlap.
            share = 0.5 if edge.target in column else 0.3
            lx, ly = x1 + (x2 - x1) * share, y1 + (y2 - y1) * share - 6
        title = f"{names.get(edge.source, edge.source)}: {edge.outcome} → " + (
            names.get(edge.target) or TERMINALS.get(edge.target, edge.target)
        )
        parts.append(
            f'<g class="pipeline-edge"><title>{escape(title)}{count}</title>'
            f'<path d="{path}" fill="none" marker-end="url(#arrow)"/>'
            f'<text x="{lx}" y="{ly}" text-anchor="middle">{escape(label)}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"

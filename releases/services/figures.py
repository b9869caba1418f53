"""The figures a release's datasheet states: items in and out of each stage, agreement over
exactly the released items (computed during the build), people by role, the fields and a
default citation."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db.models import Count, Q

from annotation.models import Annotation, ItemStage, Project, Resolution, Stage
from imports.core import schema_for_kind
from releases.services.rows import RELEASED_STATUSES
from releases.writers import (
    csv_timestamp,
)

#: The agreement figure a datasheet leads with, first found (``stage_agreement``'s metric
#: names): κ for categorical stages, α (interval) for numeric ones.
METRIC_PREFERENCE = ("fleiss_kappa", "cohen_kappa", "krippendorff_alpha_interval",
                     "krippendorff_alpha_nominal", "krippendorff_alpha_ordinal", "icc",
                     "percent_agreement")  # fmt: skip


def stage_figures(
    project: Project, stages: list[Stage], *, computed_at: datetime
) -> list[dict[str, Any]]:
    counts = {
        row["stage_id"]: row
        for row in ItemStage.objects.filter(stage__project=project)
        .values("stage_id")
        .annotate(
            items_in=Count("pk"),
            items_out=Count(
                "pk",
                filter=Q(state=ItemStage.State.RESOLVED, resolution__outcome="accept"),
            ),
        )
    }
    figures = []
    for stage in stages:
        row: Mapping[str, Any] = counts.get(stage.pk, {})
        figures.append(
            {
                "name": stage.name,
                "slug": stage.slug,
                "task": stage.kind,
                "overlap": stage.overlap,
                "items_in": row.get("items_in", 0),
                "items_out": row.get("items_out", 0),
                "agreement": _agreement(stage, computed_at=computed_at),
            }
        )
    return figures


def _agreement(stage: Stage, *, computed_at: datetime) -> dict[str, Any] | None:
    """The stage's agreement over exactly the released items, computed now (inside the build's
    snapshot): the stage's votes (those ``agreement.votes.stage_votes`` reads: completed item
    stages, the last phase's annotations) on released items, counted per item by the database
    (``agreement.vote_counts.stage_vote_counts``), through the same figures the agreement app
    stores (``agreement.stage_statistics.stage_agreement_counts``, equal to ``stage_agreement``
    over those votes). Memory follows the distinct vote patterns, never the items or votes.
    The preferred metric (METRIC_PREFERENCE) with its CI, the other metrics' values,
    and when and over what it was computed. None when the stage's kind has no agreement
    figures or no released item has votes in it. Never a stored snapshot: those cover other
    items (open, discarded) and another moment."""
    from agreement.stage_statistics import stage_agreement_counts
    from agreement.vote_counts import stage_vote_counts

    counts = stage_vote_counts(stage, item_statuses=RELEASED_STATUSES)
    if not counts.n_votes:
        return None
    results = [result for result in stage_agreement_counts(counts) if result.defined]
    if not results:
        return None
    ranked = sorted(
        results,
        key=lambda r: (
            METRIC_PREFERENCE.index(r.metric) if r.metric in METRIC_PREFERENCE else 99,
            r.metric,
        ),
    )
    chosen = ranked[0].to_dict()
    return {
        "metric": chosen["metric"],
        "value": chosen["value"],
        "ci_low": chosen["ci_low"],
        "ci_high": chosen["ci_high"],
        "ci_level": chosen["confidence"],
        "n_items": chosen["n_items"],
        "n_annotators": chosen["n_raters"] or 0,
        "n_annotations": chosen["n_annotations"],
        "computed_at": csv_timestamp(computed_at.replace(microsecond=0)),
        "scope": "released items",
        "others": {result.metric: result.to_dict()["value"] for result in ranked[1:]},
    }


def people_by_role(project: Project) -> dict[str, int]:
    annotations = Annotation.objects.filter(item_stage__stage__project=project)
    roles = {
        "annotator": annotations.exclude(annotator=None).values("annotator").distinct().count(),
        "reviewer": Resolution.objects.filter(item_stage__stage__project=project)
        .exclude(decided_by=None)
        .values("decided_by")
        .distinct()
        .count(),
    }
    imported = annotations.exclude(external_rater="").values("external_rater").distinct().count()
    if imported:
        roles["external rater (imported)"] = imported
    return roles


def default_citation(project: Project, version: int, year: int) -> str:
    key = f"{project.slug.replace('-', '_')}_v{version}"
    return (
        f"@misc{{{key},\n  title = {{{{{project.name}}}, release v{version}}},\n"
        f"  year = {{{year}}},\n  note = {{Built with Rungwise}}\n}}"
    )


def datasheet_fields(project: Project, stages: list[Stage]) -> list[dict[str, Any]]:
    fields = [
        {"name": "external_id", "type": "text", "required": True,
         "description": "Identifier of the item in the source data."},
        {"name": "status", "type": "accepted or rejected", "required": True,
         "description": "Outcome of the pipeline (rejected items are kept, flagged)."},
        {"name": "purpose", "type": "regular, practice or attention_check", "required": True,
         "description": "Why the item was shown."},
        {"name": "group", "type": "text", "required": False,
         "description": "Items of one group are variants of one source item."},
        {"name": "version", "type": "a whole number", "required": True,
         "description": "Content version (revisions during the pipeline raise it)."},
    ]  # fmt: skip
    for field in schema_for_kind(project.kind).describe():
        if field["name"] == schema_for_kind(project.kind).external_id_field:
            continue
        fields.append({**field, "name": f"payload.{field['name']}"})
    for stage in stages:
        fields.append(
            {
                "name": f"stages.{stage.slug}.*",
                "type": "object",
                "required": False,
                "description": f"{stage.name}: resolved value, status, outcome, votes and the "
                f"share of votes for the value (agreement).",
            }
        )
    return fields

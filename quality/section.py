"""The quality section of each stage's Agreement page (agreement/sections.py): a line saying
whether the stage acts on gold accuracy, who is paused or screened out, a link to the stage's
quality page and its per-annotator CSV (served by the Agreement page's CSV URL, spreadsheet-safe)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from quality import selectors
from quality.models import QualityAction, QualityRule

TEMPLATE = "quality/section.html"
TABLE = "annotator-quality"

HEADER = [
    "user_id", "annotator", "answers", "gold_answers", "gold_right", "gold_accuracy",
    "gold_ci_low", "gold_ci_high", "median_seconds", "longest_run", "top_share",
    "distance_from_others", "flags", "action", "action_reason",
]  # fmt: skip


@dataclass(frozen=True)
class SectionSummary:
    rule: QualityRule | None
    acting: int


def summary(stage: Any) -> SectionSummary:
    """Two cheap reads (the Agreement page shows it on every stage): the rule and the number of
    actions in force."""
    return SectionSummary(
        rule=selectors.stage_rule(stage),
        acting=QualityAction.objects.filter(stage=stage, undone_at__isnull=True).count(),
    )


def table(stage: Any) -> tuple[list[str], list[list[Any]]]:
    rows = []
    for row in selectors.stage_quality(stage).rows:
        interval = row.interval
        rows.append(
            [
                row.user_id,
                row.name,
                row.answers,
                row.gold,
                row.gold_right,
                row.accuracy,
                interval.low if interval else None,
                interval.high if interval else None,
                row.median_seconds,
                row.longest_run,
                row.top_share,
                row.distance,
                "; ".join(row.flags),
                row.action.kind if row.action else "",
                row.action.reason if row.action else "",
            ]
        )
    return HEADER, rows


def stage_section() -> Any:
    from agreement.sections import StageSection

    return StageSection(key="quality", template=TEMPLATE, context=summary, tables={TABLE: table})

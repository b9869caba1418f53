"""The five CSV tables of a stage's dashboard: their columns and rows, one function each
(CONTRIBUTING.md, "Thin views").

``stage_table(stage, table, ...)`` returns a ``CsvTable`` (a header and an iterable of rows of
plain values); ``annotation.web.csv_response`` spells the cells (spreadsheet-safe text, UTC
timestamps) and streams them. Rows come from ``agreement.selectors``; the caller has checked
that the user may monitor the stage (``access_project(..., MONITOR)``).

The columns are a published format (analysis scripts read them): change them only on purpose,
and say so in the README's "Agreement, adjudication and dashboards".
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection

from agreement import sections, selectors
from annotation import keyset
from annotation.models import Stage

#: The tables a stage offers, in the order its page lists them.
CSV_TABLES = ("agreement", "annotators", "labels", "progress", "disagreements")

AGREEMENT_COLUMNS = [
    "computed_at",
    "metric",
    "value",
    "ci_low",
    "ci_high",
    "se",
    "ci_method",
    "n_items",
    "n_annotators",
    "n_annotations",
]
#: Per-annotator figures, in their column order (between the annotator and the flags).
ANNOTATOR_FIGURES = [
    "n_annotations",
    "n_votes",
    "n_compared",
    "n_agree",
    "majority_agreement",
    "n_gold",
    "n_gold_agree",
    "gold_agreement",
    "median_seconds",
    "n_skipped",
    "n_decisions",
    "skip_rate",
    "mean_abs_deviation",
]
ANNOTATOR_COLUMNS = ["user_id", "annotator", "paused", *ANNOTATOR_FIGURES, "flags"]
LABEL_COLUMNS = ["value", "votes", "share", "resolved_items", "resolved_share", "kappa", "kappa_z"]
PROGRESS_COLUMNS = [
    "bucket_start",
    "bucket",
    "annotations",
    "items_completed",
    "cumulative_annotations",
    "cumulative_items_completed",
]
DISAGREEMENT_COLUMNS = [
    "item_stage_id",
    "external_id",
    "item",
    "resolution_status",
    "resolved_value",
    "decided_by",
    "reason",
    "annotator",
    "vote",
    "comment",
    "seconds_spent",
]
#: Item stages read per query while the disagreement table streams.
DISAGREEMENT_CHUNK = 500


@dataclass(frozen=True)
class CsvTable:
    """A table to download: its header and its rows (read as the response streams)."""

    header: Sequence[str]
    rows: Iterable[Sequence[Any]]
    #: Or the lines after the header, already spelled by PostgreSQL (``annotation.web``'s
    #: ``csv_response(…, lines=…)``): then ``rows`` is empty.
    lines: Iterable[str] | None = None


def agreement_table(stage: Stage) -> CsvTable:
    """Every agreement figure ever computed for the stage, oldest first."""
    rows = (
        [
            snapshot.computed_at,
            snapshot.metric,
            snapshot.value,
            snapshot.ci_low,
            snapshot.ci_high,
            snapshot.details.get("se"),
            snapshot.details.get("ci_method"),
            snapshot.n_items,
            snapshot.n_annotators,
            snapshot.n_annotations,
        ]
        for snapshot in selectors.agreement_history_rows(stage).iterator(chunk_size=2000)
    )
    return CsvTable(AGREEMENT_COLUMNS, rows)


def annotators_table(stage: Stage, *, sort: str, descending: bool | None) -> CsvTable:
    """The per-annotator table in the order the page shows it (``selectors.annotator_rows``)."""
    annotators, _ = selectors.annotator_rows(stage, sort=sort, descending=descending)
    rows = (
        [
            row.user_id,
            row.name,
            row.is_paused,
            *[row.quality.get(field) for field in ANNOTATOR_FIGURES],
            "; ".join(row.quality.get("flags") or []),
        ]
        for row in annotators
    )
    return CsvTable(ANNOTATOR_COLUMNS, rows)


def labels_table(stage: Stage) -> CsvTable:
    """The label distribution of the latest figures (``selectors.label_distribution``; the
    resolved items stored for a large stage, ``agreement.stored``)."""
    from agreement import stored

    snapshots = selectors.latest_snapshots(stage)
    resolved = stored.stage_progress_shown(stage).resolved
    rows = (
        [
            row["value"],
            row["votes"],
            row["share"],
            row["resolved"],
            row["resolved_share"],
            row["kappa"],
            row["kappa_z"],
        ]
        for row in selectors.label_distribution(stage, snapshots, stored_resolved=resolved)
    )
    return CsvTable(LABEL_COLUMNS, rows)


def progress_table(stage: Stage) -> CsvTable:
    """Annotations and completed items per time bucket (``selectors.stage_progress_series``;
    stored for a large stage, ``agreement.stored``)."""
    from agreement import stored

    series = stored.stage_progress_series_shown(stage)
    rows = (
        [
            row["bucket_start"],
            series.unit,
            row["annotations"],
            row["items_completed"],
            row["cumulative_annotations"],
            row["cumulative_items_completed"],
        ]
        for row in series.rows()
    )
    return CsvTable(PROGRESS_COLUMNS, rows)


def disagreements_table(stage: Stage, *, show: str) -> CsvTable:
    """One row per (item, annotator) of the items ``show`` selects
    (``selectors.DISAGREEMENT_FILTERS``): the long format analysis scripts expect. On
    PostgreSQL the database spells the whole file in one statement
    (``agreement.disagreements_sql``: the same bytes); elsewhere Python writes it here."""
    if connection.vendor == "postgresql":
        from agreement.disagreements_sql import disagreement_csv_lines

        return CsvTable(DISAGREEMENT_COLUMNS, (), lines=disagreement_csv_lines(stage, show))
    return CsvTable(DISAGREEMENT_COLUMNS, _disagreement_rows(stage, show))


def _disagreement_rows(stage: Stage, show: str) -> Iterator[list[Any]]:
    # Keyset pages in the list's own order (newest decision first, then the item stage's id,
    # both descending; annotation/keyset.py): each chunk starts after the last row of the one
    # before, walking the stage's index, so no chunk counts, sorts or skips rows (OFFSET
    # re-reads every row before it).
    item_stages = selectors.disagreement_items(stage, show=show)
    after: str | None = None
    while True:
        page = keyset.keyset_page(
            item_stages, key=selectors.DECIDED_AT, per_page=DISAGREEMENT_CHUNK, after=after
        )
        chunk = list(page.rows)
        if not chunk:
            return
        votes, raters = selectors.votes_by_item(chunk, stage)
        names = dict(raters)
        for item_stage in chunk:
            resolution = item_stage.resolution
            decided_by = resolution.decided_by.get_username() if resolution.decided_by else ""
            for rater, vote in votes.get(item_stage.pk, {}).items():
                comment = vote["comment"]
                yield [
                    item_stage.pk,
                    item_stage.item.external_id,
                    selectors.item_summary(item_stage.item),
                    resolution.status,
                    selectors.json_text(resolution.value),
                    decided_by,
                    resolution.reason,
                    names.get(rater, rater),
                    selectors.json_text(vote["value"]),
                    selectors.json_text(comment) if comment else "",
                    vote["seconds"],
                ]
        if page.next_cursor is None:
            return
        after = page.next_cursor


def offers(table: str) -> bool:
    """Whether ``table`` names a CSV table of the stage page: its own (``CSV_TABLES``) or one of
    a registered section's (``agreement.sections``)."""
    return table in CSV_TABLES or table in sections.table_names()


def stage_table(
    stage: Stage, table: str, *, sort: str, descending: bool | None, show: str
) -> CsvTable:
    """The table named ``table`` (``offers(table)``: the caller checks the name): the
    annotators in the order ``sort``/``descending``, the disagreements ``show`` selects, a
    registered section's table by its name."""
    if table not in CSV_TABLES:
        header, rows = sections.table(stage, table)
        return CsvTable(header=header, rows=rows)
    if table == "agreement":
        return agreement_table(stage)
    if table == "annotators":
        return annotators_table(stage, sort=sort, descending=descending)
    if table == "labels":
        return labels_table(stage)
    if table == "progress":
        return progress_table(stage)
    return disagreements_table(stage, show=show)

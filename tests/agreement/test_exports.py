"""The five CSV tables of a stage (agreement/exports.py) are a published format: their bytes are
the same as when the dashboard's view spelled them itself. Each test builds the expected file
the way the view did — the header written out, each row read straight from the selectors — and
compares it byte for byte with the download."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import pytest
from django.urls import reverse

from agreement import selectors
from annotation.models import Annotation, ItemStage, Resolution
from annotation.web import spreadsheet_safe
from tests.agreement import test_views
from tests.agreement.test_views import HYPERLINK, client_for

# The dashboard tests' study (three annotators, ties waiting for a reviewer) and their set-up.
study = test_views.study
_fast_passwords = test_views._fast_passwords
_on_commit = test_views._on_commit

pytestmark = pytest.mark.django_db


def expected(header: list[str], rows) -> bytes:
    """A download as the view spelled it: BOM, header, cells (None empty, text made safe,
    times in UTC ISO 8601, the rest as the csv module writes it), CRLF line endings."""

    def cell(value):
        if value is None:
            return ""
        if isinstance(value, datetime):
            value = value if value.tzinfo else value.replace(tzinfo=UTC)
            return value.astimezone(UTC).isoformat()
        if isinstance(value, str):
            return spreadsheet_safe(value)
        return value

    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    for row in rows:
        writer.writerow([cell(value) for value in row])
    return ("\ufeff" + out.getvalue()).encode("utf-8")


def download(study, table: str, query: str = "") -> bytes:
    client = client_for(study.researcher)
    url = reverse("agreement:csv", args=[study.project.slug, study.stage.slug, table]) + query
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == (
        f'attachment; filename="{study.project.slug}-{study.stage.slug}-{table}.csv"'
    )
    return b"".join(response.streaming_content)


@pytest.fixture
def hostile(study):
    """Text a spreadsheet would run: in a comment and a reviewer's reason."""
    split = Resolution.objects.filter(item_stage__stage=study.stage).exclude(status="unanimous")
    first = split.order_by("pk").first()
    annotation = Annotation.objects.filter(item_stage=first.item_stage).order_by("pk").first()
    annotation.payload = {**annotation.payload, "comment": HYPERLINK}
    annotation.save(update_fields=["payload"])
    Resolution.objects.filter(pk=first.pk).update(reason="+cmd|' /C calc'!A0")
    return study


def test_the_agreement_table_is_unchanged(study):
    header = (
        "computed_at metric value ci_low ci_high se ci_method n_items n_annotators n_annotations"
    )
    rows = [
        [
            s.computed_at,
            s.metric,
            s.value,
            s.ci_low,
            s.ci_high,
            s.details.get("se"),
            s.details.get("ci_method"),
            s.n_items,
            s.n_annotators,
            s.n_annotations,
        ]
        for s in selectors.agreement_history_rows(study.stage)
    ]
    assert rows
    assert download(study, "agreement") == expected(header.split(), rows)


@pytest.mark.parametrize(
    ("query", "sort", "descending"),
    [("", "majority_agreement", None), ("?sort=name&dir=asc", "name", False)],
)
def test_the_annotator_table_is_unchanged_in_the_order_asked(study, query, sort, descending):
    figures = (
        "n_annotations n_votes n_compared n_agree majority_agreement n_gold n_gold_agree "
        "gold_agreement median_seconds n_skipped n_decisions skip_rate mean_abs_deviation"
    ).split()
    annotators, _ = selectors.annotator_rows(study.stage, sort=sort, descending=descending)
    rows = [
        [
            row.user_id,
            row.name,
            row.is_paused,
            *[row.quality.get(field) for field in figures],
            "; ".join(row.quality.get("flags") or []),
        ]
        for row in annotators
    ]
    header = ["user_id", "annotator", "paused", *figures, "flags"]
    assert download(study, "annotators", query) == expected(header, rows)


def test_the_label_table_is_unchanged(study):
    snapshots = selectors.latest_snapshots(study.stage)
    keys = ("value", "votes", "share", "resolved", "resolved_share", "kappa", "kappa_z")
    rows = [
        [row[key] for key in keys] for row in selectors.label_distribution(study.stage, snapshots)
    ]
    header = "value votes share resolved_items resolved_share kappa kappa_z".split()
    assert download(study, "labels") == expected(header, rows)


def test_the_progress_table_is_unchanged(study):
    series = selectors.stage_progress_series(study.stage)
    rows = [
        [
            row["bucket_start"],
            series.unit,
            row["annotations"],
            row["items_completed"],
            row["cumulative_annotations"],
            row["cumulative_items_completed"],
        ]
        for row in series.rows()
    ]
    header = (
        "bucket_start bucket annotations items_completed cumulative_annotations "
        "cumulative_items_completed"
    ).split()
    assert download(study, "progress") == expected(header, rows)


@pytest.mark.parametrize("show", ["split", "all", "nonsense"])
def test_the_disagreement_table_is_unchanged_and_safe(hostile, show):
    study = hostile
    chosen = show if show in selectors.DISAGREEMENT_FILTERS else "split"
    item_stages = list(selectors.disagreement_items(study.stage, show=chosen))
    votes, raters = selectors.votes_by_item(item_stages, study.stage)
    names = dict(raters)
    rows = []
    for item_stage in item_stages:
        resolution = item_stage.resolution
        for rater, vote in votes.get(item_stage.pk, {}).items():
            rows.append(
                [
                    item_stage.pk,
                    item_stage.item.external_id,
                    selectors.item_summary(item_stage.item),
                    resolution.status,
                    selectors.json_text(resolution.value),
                    resolution.decided_by.get_username() if resolution.decided_by else "",
                    resolution.reason,
                    names.get(rater, rater),
                    selectors.json_text(vote["value"]),
                    vote["comment"],
                    vote["seconds"],
                ]
            )
    assert rows
    header = (
        "item_stage_id external_id item resolution_status resolved_value decided_by reason "
        "annotator vote comment seconds_spent"
    ).split()
    body = download(study, "disagreements", f"?show={show}")
    assert body == expected(header, rows)
    if chosen == "split":
        assert b"'=HYPERLINK" in body and b"'+cmd" in body


def test_the_disagreement_table_streams_every_row_once_in_keyset_chunks(hostile, monkeypatch):
    """Chunks of one item stage, every decision at the same moment (the keyset's tie-break on
    the id decides): the file is still the one above, each row once and in order."""
    from agreement import exports

    monkeypatch.setattr(exports, "DISAGREEMENT_CHUNK", 1)
    ItemStage.objects.filter(stage=hostile.stage).update(
        resolved_at=datetime(2026, 11, 27, 8, 0, tzinfo=UTC)
    )
    test_the_disagreement_table_is_unchanged_and_safe(hostile, "all")

"""disagreements.csv written by PostgreSQL (agreement/disagreements_sql.py) is, byte for byte,
the file the Python writer (agreement/exports.py, the SQLite path) writes: the same rows in the
same order, every cell escaped and quoted alike."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agreement import disagreements_sql, exports, selectors
from annotation.kinds import get_kind
from annotation.models import Annotation, Item, ItemStage, Resolution
from annotation.web import csv_response
from tests.agreement import test_views
from tests.agreement.test_exports import download
from tests.agreement.test_views import HYPERLINK

study = test_views.study
_fast_passwords = test_views._fast_passwords
_on_commit = test_views._on_commit

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

#: Text cells a spreadsheet or a CSV reader could trip on.
AWKWARD = [
    HYPERLINK,
    "-0.25",
    "-cmd",
    'a,b "c"\nd\re',
    "\tx",
    "ünïcødé → ✓",
    "@sum",
    "",
]


def _bytes(table: exports.CsvTable) -> bytes:
    response = csv_response("t.csv", table.header, table.rows, lines=table.lines)
    return b"".join(
        part if isinstance(part, bytes) else part.encode() for part in response.streaming_content
    )


def _python_file(stage, show: str) -> bytes:
    return _bytes(
        exports.CsvTable(exports.DISAGREEMENT_COLUMNS, exports._disagreement_rows(stage, show))
    )


def _sql_file(stage, show: str) -> bytes:
    return _bytes(
        exports.CsvTable(
            exports.DISAGREEMENT_COLUMNS,
            (),
            lines=disagreements_sql.disagreement_csv_lines(stage, show),
        )
    )


@pytest.fixture
def awkward(postgres, study):
    """The study with every awkward value the file can hold: text a spreadsheet would run,
    commas, quotes and line breaks; votes that are numbers, lists, objects or missing; a rater
    with two current votes on one item (two rounds) and a superseded one; imported raters with
    and without a name; seconds whole, fractional, tiny and missing; item payloads of each
    summary shape; a reviewer's decision with a value, a reason and a name."""
    stage = study.stage
    annotations = list(Annotation.objects.filter(item_stage__stage=stage).order_by("pk"))
    values = ["causal", 3, ["x", "ü"], {"zz": 1, "a": [2, "=b"]}, None, 2.5, "=1+1", "-1"]
    seconds = [12.0, 0.5, None, 1e-05, 123.456, 7.0]
    for number, annotation in enumerate(annotations):
        payload = {"comment": AWKWARD[number % len(AWKWARD)]}
        value = values[number % len(values)]
        if value is not None:
            payload["value"] = value
        if number % 5 == 4:
            payload["comment"] = {"b": 1, "a": True} if number % 2 else 7
        Annotation.all_versions.filter(pk=annotation.pk).update(
            payload=payload, seconds_spent=seconds[number % len(seconds)]
        )
    item_stages = list(ItemStage.objects.filter(stage=stage).order_by("pk"))
    first, second, third = item_stages[0], item_stages[1], item_stages[2]
    # One rater, two current votes on one item stage (rounds 0 and 1): one line, the newer
    # vote, in the place of the first; a superseded version is never read.
    rater = study.annotators[0]
    Annotation.all_versions.create(
        item_stage=first, annotator=rater, payload={"value": "second round"}, round=1
    )
    Annotation.all_versions.create(
        item_stage=first, annotator=rater, payload={"value": "superseded"}, is_current=False
    )
    # Imported raters: named (a formula) and anonymous.
    Annotation.all_versions.create(
        item_stage=second, external_rater="=imported", payload={"value": "none"}, seconds_spent=1.0
    )
    Annotation.all_versions.create(item_stage=second, payload={"value": "temporal"})
    payloads = [
        {"sentence_a": '=A, "quoted"', "sentence_b": 5},
        {"text": "-plain text,\nwith a break"},
        {"question": None, "context": "ctx ✓", "extra": [1, 2]},
        {"nested": {"z": "ü" * 400, "a": 1}},
        {},
        {"sentence_a": "a", "sentence_b": None},
    ]
    for item_stage, payload in zip(item_stages, payloads, strict=False):
        Item.objects.filter(pk=item_stage.item_id).update(payload=payload)
    Resolution.objects.filter(item_stage=first).update(
        value={"label": "=x", "b": [1, 2]},
        status=Resolution.Status.ADJUDICATED,
        reason="+cmd|' /C calc'!A0\n2nd line",
        decided_by=study.reviewer,
    )
    Resolution.objects.filter(item_stage=third).update(value=None, reason="", status="majority")
    study.reviewer.username = "-rev"
    study.reviewer.save(update_fields=["username"])
    # Two item stages decided at the same moment: the id breaks the tie.
    moment = datetime(2026, 11, 27, 8, 0, tzinfo=UTC)
    ItemStage.objects.filter(pk__in=[second.pk, third.pk]).update(resolved_at=moment)
    return study


@pytest.mark.parametrize("show", list(selectors.DISAGREEMENT_FILTERS))
def test_postgresql_writes_the_python_writers_bytes(awkward, show):
    python = _python_file(awkward.stage, show)
    assert _sql_file(awkward.stage, show) == python
    if show == "all":
        body = python.decode("utf-8-sig")
        for text in ("'=HYPERLINK", "'=imported", "'-rev", "'=A", "'-plain", "second round"):
            assert text in body
        assert "superseded" not in body and '"a,b ""c""\nd\re"' in body
        assert ",-0.25," in body and ",'-cmd," in body and ",12.0" in body


def test_blocks_hold_whole_lines_and_the_structured_vote_keeps_jsonbs_key_order(
    awkward, monkeypatch
):
    """Blocks of one item stage each (its lines); a kind whose vote is an object built from two
    fields (its keys declared out of jsonb's order)."""
    monkeypatch.setattr(disagreements_sql, "FIRST_BLOCK_ROWS", 1)
    monkeypatch.setattr(disagreements_sql, "BLOCK_ROWS", 1)
    kind = get_kind(awkward.stage.kind)
    monkeypatch.setattr(kind, "vote_field", None)
    monkeypatch.setattr(kind, "vote_fields", {"relation": "value", "id": "comment"})
    python = _python_file(awkward.stage, "all")
    blocks = list(disagreements_sql.disagreement_csv_lines(awkward.stage, "all"))
    listed = selectors.disagreement_items(awkward.stage, show="all").count()
    assert len(blocks) == listed > 2 and all(block.endswith("\r\n") for block in blocks)
    assert len({block.split(",", 1)[0] for block in blocks}) == listed  # one item stage each
    assert _sql_file(awkward.stage, "all") == python
    assert '{""id"": ' in python.decode("utf-8-sig")


def test_the_download_is_one_statement_on_postgresql(awkward):
    """The view's file is the database's: the same bytes, and no query of the annotations
    through Django (the one statement runs on the raw connection's server-side cursor; what Django sees is the page's access
    checks), so none per row or per chunk."""
    with CaptureQueriesContext(connection) as captured:
        body = download(awkward, "disagreements", "?show=all")
    assert body == _python_file(awkward.stage, "all")
    assert not any("annotation_annotation" in query["sql"] for query in captured.captured_queries)


@pytest.mark.parametrize("show", ["split", "ties", "adjudicated"])
def test_an_empty_list_is_the_header_alone(awkward, show):
    """Nothing listed; for the sparse filters, not even a candidate (no statement runs)."""
    Resolution.objects.filter(item_stage__stage=awkward.stage).update(status="unanimous")
    ItemStage.objects.filter(stage=awkward.stage).update(state=ItemStage.State.RESOLVED)
    assert _sql_file(awkward.stage, show) == _python_file(awkward.stage, show)
    assert _sql_file(awkward.stage, show).count(b"\r\n") == 1

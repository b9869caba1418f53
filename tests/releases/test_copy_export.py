"""annotations.jsonl and annotations.csv written by PostgreSQL (COPY) are byte for byte what the
Python path writes, on payloads full of characters that COPY, JSON and CSV each treat specially;
the SQL spellings of floats, timestamps, compact JSON, CSV cells and pseudonyms are Python's."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import tracemalloc
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from annotation.models import Annotation, Item, ItemStage, Role
from releases import copy_export
from releases import services as release_services
from releases.copy_export import (
    ISO_CREATED_AT,
    copy_annotations_csv,
    copy_annotations_jsonl,
    copy_export_supported,
    csv_cell,
    pseudonym,
    python_float,
)
from releases.services import (
    ANNOTATION_COLUMNS,
    RELEASED_STATUSES,
    release_annotation_lines,
    release_annotation_rows,
    release_annotations_csv,
    release_annotations_jsonl,
)
from releases.writers import write_csv, write_jsonl, write_lines
from tests.factories import make_items, make_label_stage, make_member, make_project

pytestmark = pytest.mark.django_db

NASTY = 'commas, "quotes", a back\\slash, \\" and \\n typed, key: value, and more'
TRICKY_PAYLOADS = [
    {"value": "keep", "comment": NASTY},
    {"value": "reject", "comment": "line\nbreak\r\nand\ttab, then \x01\x02\x1f\x7f"},
    {"value": "keep", "comment": "ünïcödé — 因果 🧪👩🏽‍🔬 \u2028\u2029"},
    {"value": None, "why": {"nested": {"list": [1, 2.5, None, True, "x, y"], "empty": {}}}},
    {"comment": "no value at all"},
    {"value": True},
    {"value": False, "flag": None},
    {"value": 3},
    {"value": 4.5},
    {"value": 10.0},
    {"value": [1, "a, b", {"k: v": "w"}]},
    {"value": {"label": "causal", "why": "because: it rained, so"}},
    {"value": ""},
    {"value": "with,comma"},
    {"value": 'with "quote"'},
    {"value": "two\nlines"},
    {"value": "\\"},
    {"value": "keep", "k, ey: ": "a key with separators", "": "empty key"},
    {"value": "keep", "big": 12345678901234567890, "negative": -7, "float": 0.30000000000000004},
]
SECONDS = [None, 0.0, 4.5, 12.0, 1e-05, 123456789.125, 1e15, 2.5e16, -1.0]


@pytest.fixture
def tricky(postgres):
    """Three stages; items accepted, rejected (both exported), active and discarded (not);
    people and external raters (one with a comma, one a deleted account) taking turns in an
    order that numbers them differently from their ids; tricky external ids, payloads,
    seconds and timestamps (whole seconds among them)."""
    project = make_project(slug="tricky")
    stages = [
        make_label_stage(project, slug="first", name="First"),
        make_label_stage(project, slug="second-pass", name="Second pass"),
        make_label_stage(project, slug="third", name="Third"),
    ]
    make_items(project, 5)
    items = list(Item.objects.filter(project=project).order_by("pk"))
    for item, external_id, status in zip(
        items,
        ['id, with "quote"', "id\nwith newline", "ïd-ünï-🧪", "still-active", "discarded"],
        ["accepted", "rejected", "accepted", "active", "discarded"],
        strict=True,
    ):
        item.external_id, item.status = external_id, status
        item.save(update_fields=["external_id", "status"])
    people = [make_member(project, Role.ANNOTATOR, f"person-{n}") for n in range(3)]
    raters = [people[2], "ext-b", people[0], "ext, comma", "ext-a", people[1], ""]
    annotations = []
    count = 0
    for item in items:
        for stage in stages:
            item_stage, _ = ItemStage.objects.get_or_create(
                item=item, stage=stage, defaults={"target_count": 9, "random_key": 1}
            )
            for _ in range(3):
                rater = raters[count % len(raters)]
                annotations.append(
                    Annotation(
                        item_stage=item_stage,
                        annotator=None if isinstance(rater, str) else rater,
                        external_rater=rater if isinstance(rater, str) else "",
                        payload=TRICKY_PAYLOADS[count % len(TRICKY_PAYLOADS)],
                        seconds_spent=SECONDS[count % len(SECONDS)],
                    )
                )
                count += 1
    Annotation.objects.bulk_create(annotations)
    start = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    for n, pk in enumerate(
        Annotation.objects.filter(item_stage__item__project=project).values_list("pk", flat=True)
    ):
        moment = start + timedelta(seconds=n, microseconds=0 if n % 3 == 0 else 1000 * n + 7)
        Annotation.objects.filter(pk=pk).update(created_at=moment)
    return project


def jsonl_lines(path) -> list[str]:
    """The lines of a JSONL file, split on \\n only (str.splitlines also splits at U+2028)."""
    text = path.read_text("utf-8")
    assert text == "" or text.endswith("\n")
    return text.split("\n")[:-1]


def released_count(project) -> int:
    return Annotation.objects.filter(
        item_stage__item__project=project, item_stage__item__status__in=RELEASED_STATUSES
    ).count()


_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_spaced = json.JSONEncoder(ensure_ascii=False).encode  # PostgreSQL's jsonb text: ", " and ": "


def _database_json(row: dict) -> dict:
    """A row of release_annotation_rows with its payload (and an object or array vote) as the
    JSON text PostgreSQL gives: what COPY writes in their place."""
    value = row["value"]
    return {
        **row,
        "payload": _spaced(row["payload"]),
        "value": _spaced(value) if isinstance(value, dict | list) else value,
    }


def as_copy_writes(row: dict) -> str:
    """The JSON line COPY writes for a row: compact, the payload (and an object or array vote)
    in PostgreSQL's text."""
    spliced = _database_json(row)
    return (
        "{"
        + ",".join(
            _compact(key)
            + ":"
            + (spliced[key] if spliced[key] is not row[key] else _compact(row[key]))
            for key in row
        )
        + "}"
    )


def test_copy_jsonl_is_the_python_rows_with_the_databases_json_text(tricky, tmp_path):
    assert copy_export_supported(tricky)
    copied = copy_annotations_jsonl(tricky, tmp_path / "copy.jsonl", statuses=RELEASED_STATUSES)
    rows = list(release_annotation_rows(tricky))
    data = (tmp_path / "copy.jsonl").read_bytes()
    assert data == "".join(as_copy_writes(row) + "\n" for row in rows).encode("utf-8")
    assert copied.rows == len(rows) == released_count(tricky) == 27
    assert copied.sha256 == hashlib.sha256(data).hexdigest() and copied.bytes == len(data)
    # Parsed, the lines are the rows: keys, order, values.
    parsed = [json.loads(line) for line in jsonl_lines(tmp_path / "copy.jsonl")]
    assert parsed == rows and all(list(row) == ANNOTATION_COLUMNS for row in parsed)
    # The Python fallback on PostgreSQL (kinds with their own vote_value) writes the same bytes.
    lines = write_lines(release_annotation_lines(tricky), tmp_path / "lines.jsonl")
    assert (tmp_path / "lines.jsonl").read_bytes() == data and lines.rows == 27
    assert {row["external_id"] for row in rows} == {
        'id, with "quote"',
        "id\nwith newline",
        "ïd-ünï-🧪",
    }
    assert {row["stage"] for row in rows} == {"first", "second-pass", "third"}
    # People and external raters numbered apart, in order of first appearance (rater list order).
    first_seen = list(dict.fromkeys(row["rater"] for row in rows))
    assert first_seen == ["R0001", "E0001", "R0002", "E0002", "E0003", "R0003", "E0004"]
    stamps = [row["created_at"] for row in rows]
    assert any("." not in stamp for stamp in stamps) and any("." in stamp for stamp in stamps)


def test_copy_csv_is_the_python_csv_with_the_databases_json_text(tricky, tmp_path):
    """Byte for byte what write_csv gives (quoting, empty cells, \\r\\n) once the payload cells
    hold PostgreSQL's JSON text; parsed, every other cell is the Python path's own."""
    rows = list(release_annotation_rows(tricky))
    python = write_csv(rows, tmp_path / "python.csv", columns=ANNOTATION_COLUMNS)
    expected = write_csv(
        map(_database_json, rows), tmp_path / "expected.csv", columns=ANNOTATION_COLUMNS
    )
    copied = copy_annotations_csv(
        tricky, tmp_path / "copy.csv", statuses=RELEASED_STATUSES, columns=ANNOTATION_COLUMNS
    )
    data = (tmp_path / "copy.csv").read_bytes()
    assert data == (tmp_path / "expected.csv").read_bytes()
    assert (copied.rows, copied.sha256, copied.bytes) == (27, expected.sha256, expected.bytes)

    def read(path):
        return list(csv.DictReader(io.StringIO(path.read_text("utf-8"), newline="")))

    ours, theirs = read(tmp_path / "copy.csv"), read(tmp_path / "python.csv")
    assert len(ours) == len(theirs) == python.rows == 27
    assert any("\n" in cell for row in ours for cell in row.values())  # quoted line breaks
    for mine, python_row in zip(ours, theirs, strict=True):
        for column in ANNOTATION_COLUMNS:
            if column == "payload" or (column == "value" and mine[column].startswith(("[", "{"))):
                assert json.loads(mine[column]) == json.loads(python_row[column])
            else:
                assert mine[column] == python_row[column], column


def test_the_csv_columns_can_be_chosen_and_unknown_ones_are_refused(tricky, tmp_path):
    columns = ["rater", "external_id", "value"]
    expected = write_csv(
        map(_database_json, release_annotation_rows(tricky)),
        tmp_path / "expected.csv",
        columns=columns,
        extra="ignore",
    )
    copied = copy_annotations_csv(tricky, tmp_path / "copy.csv", statuses=RELEASED_STATUSES,
                                  columns=columns)  # fmt: skip
    assert copied.sha256 == expected.sha256
    with pytest.raises(ValueError, match="no column"):
        copy_annotations_csv(tricky, tmp_path / "x.csv", statuses=RELEASED_STATUSES,
                             columns=["annotator"])  # fmt: skip


def test_stored_numbers_keep_postgresqls_spelling_with_the_same_value(tricky, tmp_path):
    """A number in a payload is written as PostgreSQL stores it (the Python path re-spells it
    through a float). Parsed, the files are equal."""
    first = Annotation.objects.filter(
        item_stage__item__project=tricky, item_stage__item__status="accepted"
    ).order_by("pk")[0]
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {Annotation._meta.db_table} SET payload = "
            """'{"value": 4.50, "tiny": 1e-7}'::jsonb WHERE id = %s""",
            [first.pk],
        )
    write_jsonl(release_annotation_rows(tricky), tmp_path / "python.jsonl")
    copy_annotations_jsonl(tricky, tmp_path / "copy.jsonl", statuses=RELEASED_STATUSES)
    python = jsonl_lines(tmp_path / "python.jsonl")
    copied = jsonl_lines(tmp_path / "copy.jsonl")
    assert [json.loads(line) for line in copied] == [json.loads(line) for line in python]
    assert '"value":4.50,' in copied[0] and '"tiny": 0.0000001' in copied[0]
    assert '"value":4.5,' in python[0] and '"tiny":1e-07' in python[0]


def test_an_empty_export_is_a_header_only(postgres, tmp_path):
    project = make_project()
    make_label_stage(project)
    make_items(project, 2)  # active items: nothing released
    jsonl = copy_annotations_jsonl(project, tmp_path / "a.jsonl", statuses=RELEASED_STATUSES)
    table = copy_annotations_csv(project, tmp_path / "a.csv", statuses=RELEASED_STATUSES,
                                 columns=ANNOTATION_COLUMNS)  # fmt: skip
    assert (jsonl.rows, jsonl.bytes) == (0, 0)
    assert table.rows == 0
    assert (tmp_path / "a.csv").read_bytes() == (",".join(ANNOTATION_COLUMNS) + "\r\n").encode()


def test_ratings_with_cant_judge_answers_go_through_copy_like_every_kind(postgres, tmp_path):
    """ratings' rate kind declares its vote as the payload's "value" (a "can't judge" rating
    stores null there, so it casts no vote): its project is exported by COPY, and the lines
    read back as the Python rows do."""
    project = make_project(kind="generic")
    from annotation import services

    stage = services.stage_create(project=project, slug="rate", name="Rate", kind="rate",
                                  overlap=2, config={"min": 1, "max": 7})  # fmt: skip
    make_items(project, 1)
    item = Item.objects.get(project=project)
    item.status = "accepted"
    item.save(update_fields=["status"])
    item_stage, _ = ItemStage.objects.get_or_create(
        item=item, stage=stage, defaults={"target_count": 2, "random_key": 1}
    )
    Annotation.objects.bulk_create(
        [
            Annotation(item_stage=item_stage, external_rater="a", payload={"value": 5}),
            Annotation(item_stage=item_stage, external_rater="b",
                       payload={"value": None, "cannot_judge": True, "reason": "unclear"}),
        ]
    )  # fmt: skip
    assert copy_export_supported(project)
    entry = release_annotations_jsonl(project, tmp_path / "a.jsonl")
    release_annotations_csv(project, tmp_path / "a.csv")
    rows = [json.loads(line) for line in jsonl_lines(tmp_path / "a.jsonl")]
    assert entry.rows == 2 and [row["value"] for row in rows] == [5, None]
    assert rows == list(release_annotation_rows(project))


def test_the_release_services_use_copy_on_postgresql(tricky, tmp_path, monkeypatch):
    monkeypatch.setattr(release_services, "release_annotation_rows", None)  # must not be used
    monkeypatch.setattr(release_services, "release_annotation_lines", None)
    jsonl = release_annotations_jsonl(tricky, tmp_path / "annotations.jsonl")
    table = release_annotations_csv(tricky, tmp_path / "annotations.csv")
    assert (jsonl.name, jsonl.rows, table.name, table.rows) == (
        "annotations.jsonl",
        27,
        "annotations.csv",
        27,
    )


def test_copy_export_memory_is_flat_in_the_number_of_annotations(postgres, tmp_path):
    """Peak traced memory of the COPY path barely moves from 1,500 to 6,000 annotations."""

    def peak(items: int) -> tuple[int, int]:
        project = make_project()
        stage = make_label_stage(project, overlap=5)
        make_items(project, items)
        Item.objects.filter(project=project).update(status="accepted")
        item_stages = [
            ItemStage(item=item, stage=stage, target_count=5, random_key=1)
            for item in Item.objects.filter(project=project)
        ]
        ItemStage.objects.bulk_create(item_stages, ignore_conflicts=True)
        Annotation.objects.bulk_create(
            Annotation(item_stage=item_stage, external_rater=f"rater-{n}",
                       payload={"value": "causal", "comment": "x, y: " * 10})
            for item_stage in ItemStage.objects.filter(stage=stage)
            for n in range(5)
        )  # fmt: skip
        tracemalloc.start()
        jsonl = release_annotations_jsonl(project, tmp_path / "a.jsonl")
        release_annotations_csv(project, tmp_path / "a.csv")
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top, jsonl.rows

    small, rows_small = peak(300)
    large, rows_large = peak(1200)
    assert (rows_small, rows_large) == (1500, 6000)
    assert large < 1.3 * small + 64 * 1024, (small, large)


# --- The SQL spellings, one expression at a time ------------------------------------------------


def select(sql: str, params: list, *, setting: str = "") -> list:
    with transaction.atomic(), connection.cursor() as cursor:
        if setting:
            cursor.execute(f"SET LOCAL {setting}")
        cursor.execute(sql, params)
        return [row[0] for row in cursor.fetchall()]


FLOATS = [0.0, -0.0, 1.0, -1.0, 4.5, 12.0, 0.1, 1 / 3, 2 / 3 * 1e10, 1e-4, 1e-5, 1.5e-7,
          123456789012345.0, 999999999999999.0, 1e15, 1000000000000000.5, 1234567890123456.8,
          9999999999999998.0, 1e16, 1.5e16, 1e100, 5e-324, 1.7976931348623157e308, -1e15,
          math.nan, math.inf, -math.inf]  # fmt: skip


def test_floats_are_spelled_as_python_spells_them(postgres):
    expression = python_float("x")
    spelled = select(
        f"SELECT {expression} FROM unnest(%s::float8[]) WITH ORDINALITY u(x, n) ORDER BY n",
        [FLOATS],
        setting="extra_float_digits = 1",
    )
    assert spelled == [json.dumps(x) for x in FLOATS]
    assert select(f"SELECT {expression} FROM (SELECT NULL::float8 AS x) t", []) == [None]


@given(st.floats(allow_nan=False))
@example(1e23)
@example(4.846245541187938e16)
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_float_is_spelled_as_python_spells_it_below_1e16(postgres, value):
    """Below 1e16 the spelling is Python's; above, PostgreSQL and Python may break a tie between
    two shortest spellings differently (1e+23 vs 9.999999999999999e+22): the same number."""
    [spelled] = select(
        f"SELECT {python_float('x')} FROM (SELECT %s::float8 AS x) t",
        [value],
        setting="extra_float_digits = 1",
    )
    assert float(spelled) == value and math.copysign(1, float(spelled)) == math.copysign(1, value)
    if abs(value) < 1e16:
        assert spelled == json.dumps(value)


@pytest.mark.parametrize("zone", ["UTC", "America/St_Johns"])
def test_timestamps_are_spelled_as_isoformat_in_utc(postgres, zone):
    moments = [
        datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        datetime(2026, 1, 2, 3, 4, 5, 1, tzinfo=UTC),
        datetime(2026, 1, 2, 3, 4, 5, 500000, tzinfo=UTC),
        datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(1999, 6, 30, 12, 0, 0, 120000, tzinfo=UTC),
    ]
    spelled = select(
        f"SELECT {ISO_CREATED_AT} FROM unnest(%s::timestamptz[]) WITH ORDINALITY a(created_at, n) "
        f"ORDER BY n",
        [moments],
        setting=f"TIME ZONE '{zone}'",
    )
    assert spelled == [moment.isoformat() for moment in moments]
    assert spelled[0] == "2026-01-02T03:04:05+00:00"


@given(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")))
@example("")
@example('a "quoted", comma\r\nand line')
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_csv_cells_are_quoted_as_the_csv_module_quotes_them(postgres, value):
    [cell] = select(f"SELECT {csv_cell('x.t')} FROM (SELECT %s::text AS t) x", [value])
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow([value, "end"])
    assert cell + ",end\r\n" == buffer.getvalue()


def test_pseudonyms_have_at_least_four_digits(postgres):
    numbers = [1, 42, 9999, 10000, 123456]
    spelled = select(
        f"SELECT {pseudonym(chr(39) + 'R' + chr(39), 'n')} "
        f"FROM unnest(%s::int[]) WITH ORDINALITY u(n, position) ORDER BY position",
        [numbers],
    )
    assert spelled == [f"R{n:04d}" for n in numbers]


@pytest.mark.parametrize(
    ("blocks", "message"),
    [
        ([b'{"a":1}\n', b'\x02{"b":"\x01"}\x02\n'], "quoted"),
        ([b'{"a":1}\n', b"\n"], "empty"),
        ([b"\n"], "empty"),
        ([b'{"a":1}\n\n{"b":2}\n'], "empty"),
        ([b'{"a":', b"1}\n", b"\n"], "empty"),
    ],
)
def test_a_quoted_or_null_jsonl_line_is_refused(blocks, message):
    """The guards behind the FORMAT csv trick: a line COPY quoted (impossible for PostgreSQL's
    JSON text, which escapes every control character) or a NULL line stops the export."""
    with pytest.raises(ValueError, match=message):
        list(copy_export._checked_jsonl(map(memoryview, blocks)))
    split = [b'{"a":', b'1}\n{"b":', b"2}\n"]
    assert b"".join(copy_export._checked_jsonl(map(memoryview, split))) == b"".join(split)


def test_the_copy_leaves_the_callers_settings_as_they_were(tricky, tmp_path):
    settings = (
        "SELECT current_setting('extra_float_digits'), current_setting('jit'), "
        "current_setting('enable_mergejoin')"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL extra_float_digits = 3")
        cursor.execute(settings)
        before = cursor.fetchone()
        copy_annotations_jsonl(tricky, tmp_path / "a.jsonl", statuses=RELEASED_STATUSES)
        cursor.execute(settings)
        assert cursor.fetchone() == before and before[0] == "3"

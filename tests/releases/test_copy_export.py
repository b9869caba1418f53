"""annotations.jsonl and annotations.csv written by PostgreSQL (COPY, for every kind) hold the
rows the Python path writes, once parsed (json.loads / csv.reader; numbers compared as numbers,
timestamps as datetimes), on payloads full of characters that COPY, JSON and CSV each treat
specially; the SQL spellings of pseudonyms and of the spreadsheet guard are the Python ones."""

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

from annotation import services
from annotation.kinds import KINDS, TaskKind, register_kind
from annotation.kinds.base import AgreementSpec
from annotation.models import Annotation, Item, ItemStage, Role
from releases import copy_export
from releases.copy_export import (
    copy_annotations_csv,
    copy_annotations_jsonl,
    spreadsheet_safe_sql,
)
from releases.pseudonyms import RaterPseudonyms, pseudonym, pseudonym_sql
from releases.services import (
    ANNOTATION_COLUMNS,
    RELEASED_STATUSES,
    release_annotation_rows,
    release_annotations_csv,
    release_annotations_jsonl,
)
from releases.services import rows as release_rows
from releases.writers import spreadsheet_safe, write_csv
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


def parsed_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in jsonl_lines(path)]


def comparable(row: dict) -> dict:
    """A row as both paths must agree on it: the timestamp as a datetime (numbers already
    compare as numbers: 12 == 12.0)."""
    return {**row, "created_at": datetime.fromisoformat(row["created_at"])}


def read_csv(path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text("utf-8"), newline="")))


def csv_cell_matches(column: str, value, ours: str, theirs: str) -> bool:
    """Whether two annotations.csv cells hold the same ``value`` (the Python row's) once
    parsed: JSON cells as JSON, numbers as numbers, timestamps as datetimes, text as text."""
    if column == "payload" or (column == "value" and isinstance(value, dict | list)):
        return json.loads(ours) == json.loads(theirs)
    if column == "created_at":
        return datetime.fromisoformat(ours) == datetime.fromisoformat(theirs)
    if (
        (column == "seconds_spent" or column == "value")
        and isinstance(value, int | float)
        and (not isinstance(value, bool))
    ):
        return float(ours) == float(theirs) or (math.isnan(float(ours)) and math.isnan(value))
    return ours == theirs


def assert_same_csv(copied_path, python_path, rows, columns=ANNOTATION_COLUMNS):
    ours, theirs = read_csv(copied_path), read_csv(python_path)
    assert ours[0] == theirs[0] == list(columns)
    assert len(ours) == len(theirs) == len(rows) + 1
    for mine, python_row, row in zip(ours[1:], theirs[1:], rows, strict=True):
        for column, a, b in zip(columns, mine, python_row, strict=True):
            assert csv_cell_matches(column, row[column], a, b), (column, a, b)


def test_copy_jsonl_is_the_python_rows_parsed(tricky, tmp_path):
    copied = copy_annotations_jsonl(tricky, tmp_path / "copy.jsonl", statuses=RELEASED_STATUSES)
    rows = list(release_annotation_rows(tricky))
    data = (tmp_path / "copy.jsonl").read_bytes()
    assert copied.rows == len(rows) == released_count(tricky) == 27
    assert copied.sha256 == hashlib.sha256(data).hexdigest() and copied.bytes == len(data)
    # Parsed, the lines are the rows: keys, order, values.
    parsed = parsed_jsonl(tmp_path / "copy.jsonl")
    assert [comparable(row) for row in parsed] == [comparable(row) for row in rows]
    assert all(list(row) == ANNOTATION_COLUMNS for row in parsed)
    assert {row["external_id"] for row in rows} == {
        'id, with "quote"',
        "id\nwith newline",
        "ïd-ünï-🧪",
    }
    assert {row["stage"] for row in rows} == {"first", "second-pass", "third"}
    # People and external raters numbered apart, in order of first appearance (rater list order).
    first_seen = list(dict.fromkeys(row["rater"] for row in parsed))
    assert first_seen == ["R0001", "E0001", "R0002", "E0002", "E0003", "R0003", "E0004"]
    assert [row["rater"] for row in parsed] == [row["rater"] for row in rows]
    stamps = [row["created_at"] for row in parsed]
    assert any("." not in stamp for stamp in stamps) and any("." in stamp for stamp in stamps)
    assert all(stamp.endswith("+00:00") for stamp in stamps)


def test_copy_csv_is_the_python_csv_parsed(tricky, tmp_path):
    """COPY's own CSV (\n line ends, PostgreSQL's JSON text in the payload cells) holds, cell
    by cell, what write_csv writes from the Python rows."""
    rows = list(release_annotation_rows(tricky))
    python = write_csv(rows, tmp_path / "python.csv", columns=ANNOTATION_COLUMNS)
    copied = copy_annotations_csv(
        tricky, tmp_path / "copy.csv", statuses=RELEASED_STATUSES, columns=ANNOTATION_COLUMNS
    )
    data = (tmp_path / "copy.csv").read_bytes()
    assert (copied.rows, copied.sha256, copied.bytes) == (
        python.rows,
        hashlib.sha256(data).hexdigest(),
        len(data),
    )
    assert python.rows == 27
    assert_same_csv(tmp_path / "copy.csv", tmp_path / "python.csv", rows)
    assert any("\n" in cell for row in read_csv(tmp_path / "copy.csv") for cell in row)


def test_the_csv_columns_can_be_chosen_and_unknown_ones_are_refused(tricky, tmp_path):
    columns = ["rater", "external_id", "value"]
    rows = list(release_annotation_rows(tricky))
    write_csv(rows, tmp_path / "python.csv", columns=columns, extra="ignore")
    copied = copy_annotations_csv(tricky, tmp_path / "copy.csv", statuses=RELEASED_STATUSES,
                                  columns=columns)  # fmt: skip
    assert copied.rows == 27
    assert_same_csv(tmp_path / "copy.csv", tmp_path / "python.csv", rows, columns)
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
    rows = list(release_annotation_rows(tricky))
    copy_annotations_jsonl(tricky, tmp_path / "copy.jsonl", statuses=RELEASED_STATUSES)
    copied = jsonl_lines(tmp_path / "copy.jsonl")
    assert [comparable(json.loads(line)) for line in copied] == [comparable(r) for r in rows]
    assert '"value" : 4.50,' in copied[0] and '"tiny": 0.0000001' in copied[0]


def test_an_empty_export_is_a_header_only(postgres, tmp_path):
    project = make_project()
    make_label_stage(project)
    make_items(project, 2)  # active items: nothing released
    jsonl = copy_annotations_jsonl(project, tmp_path / "a.jsonl", statuses=RELEASED_STATUSES)
    table = copy_annotations_csv(project, tmp_path / "a.csv", statuses=RELEASED_STATUSES,
                                 columns=ANNOTATION_COLUMNS)  # fmt: skip
    assert (jsonl.rows, jsonl.bytes) == (0, 0)
    assert table.rows == 0
    assert (tmp_path / "a.csv").read_bytes() == (",".join(ANNOTATION_COLUMNS) + "\n").encode()


class NestedVoteKind(TaskKind):
    """Votes with answer.label (a dotted path), for these tests only."""

    key = "nested_vote_for_export_tests"
    label = "Nested"
    vote_field = "answer.label"

    def validate(self, payload, context):
        return dict(payload)


class VerdictKind(TaskKind):
    """A structured vote (a verdict and a score), for these tests only."""

    key = "verdict_for_export_tests"
    label = "Verdict"
    vote_field = None
    vote_fields = {"verdict": "verdict", "score": "rubric.total"}
    agreement = AgreementSpec("nominal", field="verdict")

    def validate(self, payload, context):
        return dict(payload)


@pytest.fixture
def every_kind(postgres):
    """A project with a stage of each way of declaring a vote: ratings' rate (value), a nested
    path and a structured vote, each with votes present, null, missing and malformed."""
    register_kind(NestedVoteKind())
    register_kind(VerdictKind())
    project = make_project(kind="generic")
    stages = {
        "rate": services.stage_create(project=project, slug="rate", name="Rate", kind="rate",
                                      overlap=2, config={"min": 1, "max": 7}),
        "nested": services.stage_create(project=project, slug="nested", name="Nested",
                                        kind=NestedVoteKind.key, overlap=2),
        "verdict": services.stage_create(project=project, slug="verdict", name="Verdict",
                                         kind=VerdictKind.key, overlap=2),
    }  # fmt: skip
    payloads = {
        "rate": [{"value": 5}, {"value": None, "cannot_judge": True, "reason": "unclear"},
                 {"value": -0.25}, {"other": 1}],
        "nested": [{"answer": {"label": "causal"}}, {"answer": {"label": None}},
                   {"answer": "flat"}, {"answer": ["label"]}, {"value": "x"},
                   {"answer": {"label": {"deep": [1, 2]}}}],
        "verdict": [{"verdict": "keep", "rubric": {"total": 7.5}}, {"verdict": "reject"},
                    {"rubric": {"total": 3}}, {"verdict": None, "rubric": {"total": None}},
                    {"comment": "nothing"}],
    }  # fmt: skip
    make_items(project, 1)
    item = Item.objects.get(project=project)
    item.status = "accepted"
    item.save(update_fields=["status"])
    for key, stage in stages.items():
        item_stage, _ = ItemStage.objects.get_or_create(
            item=item, stage=stage, defaults={"target_count": 9, "random_key": 1}
        )
        Annotation.objects.bulk_create(
            Annotation(item_stage=item_stage, external_rater=f"rater-{n}", payload=payload,
                       seconds_spent=1.5)
            for n, payload in enumerate(payloads[key])
        )  # fmt: skip
    yield project
    KINDS.pop(NestedVoteKind.key, None)
    KINDS.pop(VerdictKind.key, None)


def test_every_kind_is_written_by_copy_with_its_declared_vote(every_kind, tmp_path, monkeypatch):
    rows = list(release_annotation_rows(every_kind))
    assert [row["value"] for row in rows] == [
        5, None, -0.25, None,
        "causal", None, None, None, None, {"deep": [1, 2]},
        {"verdict": "keep", "score": 7.5}, {"verdict": "reject", "score": None},
        {"verdict": None, "score": 3}, None, None,
    ]  # fmt: skip
    write_csv(rows, tmp_path / "python.csv", columns=ANNOTATION_COLUMNS)
    monkeypatch.setattr(release_rows, "release_annotation_rows", None)  # must not be used
    jsonl = release_annotations_jsonl(every_kind, tmp_path / "a.jsonl")
    table = release_annotations_csv(every_kind, tmp_path / "a.csv")
    assert jsonl.rows == table.rows == len(rows) == 15
    parsed = parsed_jsonl(tmp_path / "a.jsonl")
    assert [comparable(row) for row in parsed] == [comparable(row) for row in rows]
    assert_same_csv(tmp_path / "a.csv", tmp_path / "python.csv", rows)
    cells = [row[3] for row in read_csv(tmp_path / "a.csv")[1:]]
    assert cells[:3] == ["5", "", "-0.25"]  # a negative number stays a number


def test_the_release_services_use_copy_on_postgresql(tricky, tmp_path, monkeypatch):
    monkeypatch.setattr(release_rows, "release_annotation_rows", None)  # must not be used
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


# --- Spreadsheet safety -------------------------------------------------------------------------

HYPERLINK = '=HYPERLINK("http://x")'


def test_formulas_come_out_inert_in_annotations_csv_on_both_paths(tricky, tmp_path):
    """An external id, a stage slug and a vote a spreadsheet would run as a formula get a
    leading quote in COPY's CSV and in the Python writer's alike; a comment inside the payload
    cell is inert already (the cell starts with "{"); negative numbers stay numbers."""
    first = Annotation.objects.filter(
        item_stage__item__project=tricky, item_stage__item__status="accepted"
    ).order_by("pk")[0]
    Annotation.objects.filter(pk=first.pk).update(
        payload={"value": HYPERLINK, "comment": HYPERLINK}
    )
    Item.objects.filter(pk=first.item_stage.item_id).update(external_id="@SUM(1+1)*cmd")
    rows = list(release_annotation_rows(tricky))
    write_csv(rows, tmp_path / "python.csv", columns=ANNOTATION_COLUMNS)
    copy_annotations_csv(tricky, tmp_path / "copy.csv", statuses=RELEASED_STATUSES,
                         columns=ANNOTATION_COLUMNS)  # fmt: skip
    for path in (tmp_path / "copy.csv", tmp_path / "python.csv"):
        table = read_csv(path)
        header = table[0]
        line = dict(zip(header, table[1], strict=True))
        assert line["value"] == "'" + HYPERLINK
        assert line["external_id"] == "'@SUM(1+1)*cmd"
        assert json.loads(line["payload"])["comment"] == HYPERLINK
        for row in table[1:]:
            for cell in row:
                assert not cell or cell[0] not in "=+-@\t\r" or float(cell) < 0, (path, cell)


@given(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")))
@example("")
@example("=1+1")
@example("-0.25")
@example("-")
@example("+3e-5")
@example("-1+2")
@example("\t5")
@example("-.5")
@example("1.")
@example("-1.e5")
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_the_sql_spreadsheet_guard_is_the_python_one(postgres, text):
    [cell] = select(f"SELECT {spreadsheet_safe_sql('x.t')} FROM (SELECT %s::text AS t) x", [text])
    assert cell == spreadsheet_safe(text)


# --- Pseudonyms: one numbering in SQL and in Python ---------------------------------------------


def select(sql: str, params: list) -> list:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [row[0] for row in cursor.fetchall()]


def test_pseudonyms_are_spelled_alike_in_sql_and_python(postgres):
    numbers = [1, 42, 9999, 10000, 123456]
    for person in (True, False):
        spelled = select(
            f"SELECT {pseudonym_sql(person='%s', number='n')} "
            f"FROM unnest(%s::int[]) WITH ORDINALITY u(n, position) ORDER BY position",
            [person, numbers],
        )
        assert spelled == [pseudonym(person=person, number=n) for n in numbers]
    assert pseudonym(person=True, number=1) == "R0001"
    assert pseudonym(person=False, number=123456) == "E123456"


def test_the_copy_numbers_raters_as_the_python_numbering(tricky, tmp_path):
    """The COPY numbers raters in SQL; RaterPseudonyms numbers them as it meets them in id
    order: the same pseudonym for every annotation."""
    numbering = RaterPseudonyms()
    expected = [
        numbering(annotator_id, external_rater)
        for annotator_id, external_rater in Annotation.objects.filter(
            item_stage__item__project=tricky, item_stage__item__status__in=RELEASED_STATUSES
        )
        .order_by("pk")
        .values_list("annotator_id", "external_rater")
    ]
    copy_annotations_jsonl(tricky, tmp_path / "a.jsonl", statuses=RELEASED_STATUSES)
    assert [row["rater"] for row in parsed_jsonl(tmp_path / "a.jsonl")] == expected
    assert len(set(expected)) == 7


# --- The COPY stream ----------------------------------------------------------------------------


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
        "current_setting('enable_mergejoin'), current_setting('TimeZone')"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL extra_float_digits = 3")
        cursor.execute("SET LOCAL TIME ZONE 'America/St_Johns'")
        cursor.execute(settings)
        before = cursor.fetchone()
        copy_annotations_jsonl(tricky, tmp_path / "a.jsonl", statuses=RELEASED_STATUSES)
        cursor.execute(settings)
        assert cursor.fetchone() == before and before[0] == "3"
    stamps = [row["created_at"] for row in parsed_jsonl(tmp_path / "a.jsonl")]
    assert all(stamp.endswith("+00:00") for stamp in stamps)


def supersede(annotation: Annotation, payload: dict) -> Annotation:
    """A newer version of `annotation` (what annotation.services.annotation_revise stores)."""
    Annotation.all_versions.filter(pk=annotation.pk).update(is_current=False)
    return Annotation.all_versions.create(
        item_stage_id=annotation.item_stage_id,
        assignment_id=annotation.assignment_id,
        annotator_id=annotation.annotator_id,
        external_rater=annotation.external_rater,
        payload=payload,
        seconds_spent=annotation.seconds_spent,
        supersedes=annotation,
        version=annotation.version + 1,
    )


def test_both_export_paths_write_current_versions_only(tricky, tmp_path):
    """A changed answer is exported once, as changed: neither path writes superseded rows."""
    released = Annotation.objects.filter(
        item_stage__item__project=tricky, item_stage__item__status__in=RELEASED_STATUSES
    ).order_by("pk")
    changed = [supersede(annotation, {"value": "CHANGED"}) for annotation in released[:4]]
    rows = list(release_annotation_rows(tricky))
    copied = copy_annotations_jsonl(tricky, tmp_path / "copy.jsonl", statuses=RELEASED_STATUSES)
    assert copied.rows == len(rows) == released_count(tricky) == 27
    parsed = parsed_jsonl(tmp_path / "copy.jsonl")
    assert [comparable(row) for row in parsed] == [comparable(row) for row in rows]
    assert sum(row["payload"] == {"value": "CHANGED"} for row in parsed) == len(changed)
    python = write_csv(rows, tmp_path / "python.csv", columns=ANNOTATION_COLUMNS)
    copy_csv = copy_annotations_csv(
        tricky, tmp_path / "copy.csv", statuses=RELEASED_STATUSES, columns=ANNOTATION_COLUMNS
    )
    assert python.rows == copy_csv.rows == 27
    assert_same_csv(tmp_path / "copy.csv", tmp_path / "python.csv", rows)


# --- Every annotation file in one statement ---------------------------------------------------


@pytest.mark.parametrize("chunk_ids", [4096, 2])
@pytest.mark.parametrize("fixture", ["tricky", "every_kind"])
def test_one_statement_writes_each_file_byte_for_byte_as_its_own_copy(
    request, fixture, chunk_ids, tmp_path, monkeypatch
):
    """``copy_annotation_files`` (one statement for the three files) writes annotations.jsonl
    and annotations.csv byte for byte as the one-file COPYs do, whatever the chunks (a chunk of
    two ids holds one or two rows), and the Parquet rows are the JSONL rows (JSON columns
    parsed)."""
    from releases.parquet import read_parquet_rows
    from releases.services.rows import ANNOTATION_PARQUET
    from releases.sinks import ByteSink

    project = request.getfixturevalue(fixture)
    monkeypatch.setattr(copy_export, "CHUNK_IDS", chunk_ids)
    copy_annotations_jsonl(project, tmp_path / "one.jsonl", statuses=RELEASED_STATUSES)
    copy_annotations_csv(project, tmp_path / "one.csv", statuses=RELEASED_STATUSES,
                         columns=ANNOTATION_COLUMNS)  # fmt: skip
    from releases.parquet import ParquetSink

    jsonl, table = ByteSink(tmp_path / "all.jsonl"), ByteSink(tmp_path / "all.csv")
    parquet = ParquetSink(tmp_path / "all.parquet", ANNOTATION_PARQUET, row_group=5)
    rows = copy_export.copy_annotation_files(
        project, statuses=RELEASED_STATUSES, jsonl=jsonl, csv=table,
        csv_columns=ANNOTATION_COLUMNS, parquet=parquet,
    )  # fmt: skip
    entries = [jsonl.close(), table.close(), parquet.close()]
    assert (tmp_path / "all.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    assert (tmp_path / "all.csv").read_bytes() == (tmp_path / "one.csv").read_bytes()
    assert rows == released_count(project) > 0 and entries[2].rows == rows
    assert entries[0].sha256 == hashlib.sha256((tmp_path / "one.jsonl").read_bytes()).hexdigest()
    assert read_parquet_rows(tmp_path / "all.parquet") == parsed_jsonl(tmp_path / "one.jsonl")


def test_the_csv_quoting_in_sql_is_copys_own(postgres):
    """``copy_csv_cell_sql`` quotes as COPY's CSV does, NULL and the empty string included."""
    values = [None, "", "plain", "a,b", 'say "hi"', "two\nlines", "cr\rhere", "'=1", " x "]
    with connection.cursor() as cursor:
        for value in values:
            cursor.execute(f"SELECT {copy_export.copy_csv_cell_sql('%(v)s::text')}", {"v": value})
            ours = cursor.fetchone()[0]
            with cursor.cursor.copy("COPY (SELECT %(v)s::text) TO STDOUT (FORMAT csv)",
                                    {"v": value}) as copy:  # fmt: skip
                theirs = b"".join(bytes(block) for block in copy).decode()
            assert ours + "\n" == theirs, value

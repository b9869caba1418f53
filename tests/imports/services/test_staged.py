"""The one-pass PostgreSQL import (imports/services/staged.py): rows COPYed into a staging
table, ids checked by SQL, one INSERT … SELECT. Errors come out by line, a failed import keeps
nothing, and what it writes is exactly what the two-pass pipeline writes."""

from __future__ import annotations

import io
import json

import pytest

from annotation.models import Item, ItemRevision, ItemStage
from imports import services as imports
from imports.core import FieldSpec, RowSchema, register_schema
from imports.core.schema import SCHEMAS
from imports.models import ImportBatch
from imports.services import ItemFields, import_batch_create, import_batch_run, register_item_mapper
from imports.services import run as import_run
from tests.factories import make_project, make_verify_stage

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("postgres")]


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def strict_kind():
    """A kind whose rows declare a choice field and whose mapper refuses some sentences."""
    register_schema(
        "staged-test",
        RowSchema(
            name="staged-test",
            external_id_field="id",
            fields=(
                FieldSpec("id", "str", required=True),
                FieldSpec("sentence", "str", required=True),
                FieldSpec("level", "choice", choices=("L1", "L2", "L3"), required=True),
            ),
        ),
    )

    def mapper(clean, schema, options):
        if clean["sentence"].startswith("!"):
            raise ValueError("Sentences must not start with '!'.")
        return ItemFields(payload={"sentence": clean["sentence"], "level": clean["level"]})

    register_item_mapper("staged-test", mapper)
    yield "staged-test"
    SCHEMAS.pop("staged-test")
    imports.ITEM_MAPPERS.pop("staged-test")


def upload(project, data: bytes, filename: str = "rows.jsonl", **options) -> ImportBatch:
    batch = import_batch_create(
        project=project, user=None, fileobj=io.BytesIO(data), filename=filename, options=options
    )
    return import_batch_run(batch_id=batch.pk)


def snapshot(project) -> tuple:
    """Everything an import could have written for ``project``."""
    return (
        sorted(Item.objects.filter(project=project).values_list("external_id", "payload")),
        ItemStage.objects.filter(item__project=project).count(),
        ItemRevision.objects.filter(item__project=project).count(),
    )


def line(row: dict) -> str:
    return json.dumps(row) + "\n"


def test_errors_come_out_by_line_and_a_failed_import_keeps_nothing(strict_kind):
    """Bad JSON, a kind's invalid field, a mapper's refusal (found in Python while streaming),
    an id twice in the file and an id already in the project (found by SQL afterwards): every
    one reported on its own line, in line order, and the database is as it was."""
    project = make_project(kind=strict_kind)
    make_verify_stage(project)
    first = upload(project, line({"id": "old", "sentence": "Kept.", "level": "L1"}).encode())
    assert first.status == "succeeded", first.message
    before = snapshot(project)
    data = "".join(
        [
            line({"id": "a", "sentence": "One.", "level": "L1"}),  # 1 fine
            '{"id": "b", "sentence": "Two.", "level": \n',  # 2 bad JSON
            line({"id": "c", "sentence": "Three.", "level": "L9"}),  # 3 not a level
            line({"id": "a", "sentence": "Again.", "level": "L2"}),  # 4 id of line 1
            line({"id": "old", "sentence": "Four.", "level": "L3"}),  # 5 already in project
            line({"id": "d", "sentence": "!Five.", "level": "L2"}),  # 6 mapper refuses
            line({"id": "e", "sentence": "Six.", "level": "L3"}),  # 7 fine
        ]
    ).encode()
    batch = upload(project, data)
    assert batch.status == ImportBatch.Status.FAILED
    assert [(error["line"], error["code"]) for error in batch.errors] == [
        (2, "json_syntax"),
        (3, "unknown_choice"),
        (4, "duplicate_in_file"),
        (5, "duplicate_existing"),
        (6, "wrong_type"),
    ]
    assert batch.error_count == 5 and batch.rows_total == 7
    assert "used on line 1 and again on line 4" in batch.errors[2]["message"]
    assert "must not start" in batch.errors[4]["message"]
    assert "nothing was imported" in batch.message
    assert snapshot(project) == before
    assert (batch.items_created, batch.rows_written) == (0, 0)


def test_the_error_list_is_capped_in_line_order_with_the_true_count():
    """Repeated ids found by SQL and bad rows found in Python interleave by line; the list
    keeps the first ERROR_CAP of them, the count all."""
    project = make_project()
    rows = []
    for n in range(300):
        rows.append(line({"id": f"r{n}", "text": "x"}))
        rows.append(line({"id": f"r{n}", "text": "y"}) if n % 2 else "[1]\n")
    batch = upload(project, "".join(rows).encode())
    assert batch.status == ImportBatch.Status.FAILED
    assert batch.error_count == 300
    assert len(batch.errors) == imports.ERROR_CAP
    lines = [error["line"] for error in batch.errors]
    assert lines == list(range(2, 2 * imports.ERROR_CAP + 1, 2))
    codes = {error["code"] for error in batch.errors}
    assert codes == {"duplicate_in_file", "not_an_object"}
    assert not Item.objects.filter(project=project).exists()


def test_the_staged_and_the_two_pass_paths_write_the_same_rows(monkeypatch):
    """20,000 rows (groups, gold, purposes, nested values) imported by each path into its own
    project: the same items, field for field, and the same item stages."""
    rows = [
        {
            "id": f"item-{n:05d}",
            "text": f'Sentence {n} — ünïcode, "quotes", tab\there.',
            "family": f"f{n % 97}" if n % 3 else "",
            "role": "practice" if n % 1000 == 0 else "regular",
            "answer": "keep" if n % 500 == 0 else "",
            "score": n % 11,
            "nested": {"list": [n, n / 7, None, True], "deep": {"x": "y"}},
        }
        for n in range(20_000)
    ]
    data = "".join(line(row) for row in rows).encode()
    options = {"group_field": "family", "purpose_field": "role", "gold_field": "answer"}
    written = {}
    for staged in (True, False):
        monkeypatch.setattr(import_run, "STAGED_ON_POSTGRESQL", staged)
        project = make_project()
        make_verify_stage(project)
        batch = upload(project, data, **options)
        assert batch.status == "succeeded", batch.message
        assert (batch.items_created, batch.rows_written) == (20_000, 20_000)
        items = Item.objects.filter(project=project).order_by("pk")
        written[staged] = (
            list(
                items.values_list(
                    "external_id", "payload", "group", "purpose", "source", "status", "version"
                )
            ),  # fmt: skip
            sorted(
                ItemStage.objects.filter(item__project=project).values_list(
                    "item__external_id", "state", "target_count", "group_size"
                )
            ),
        )
    assert written[True] == written[False]
    assert len(written[True][1]) == 20_000
    assert sum(purpose == "gold" for _, _, _, purpose, *_ in written[True][0]) == 40


def test_update_policy_revises_changed_items_only():
    project = make_project()
    first = upload(
        project, (line({"id": "a", "text": "x"}) + line({"id": "b", "text": "y"})).encode()
    )
    assert first.status == "succeeded"
    data = (
        line({"id": "a", "text": "x"})
        + line({"id": "b", "text": "z"})
        + line({"id": "c", "text": "w"})
    )
    batch = upload(project, data.encode(), duplicate_policy="update")
    assert batch.status == "succeeded", batch.message
    assert (batch.items_created, batch.items_updated) == (1, 1)
    assert "1 new item, 1 updated, 1 unchanged" in batch.message
    payloads = dict(Item.objects.filter(project=project).values_list("external_id", "payload"))
    assert payloads == {"a": {"text": "x"}, "b": {"text": "z"}, "c": {"text": "w"}}
    revised = ItemRevision.objects.filter(item__project=project)
    assert set(revised.values_list("item__external_id", flat=True)) == {"b"}


def test_a_bad_row_late_in_a_big_file_keeps_nothing_and_is_named_by_its_line():
    """50,000 rows, every one but two late ones fine (most checked by the compiled check of the
    simplest records): the import fails naming lines 49,998 and 49,999, and nothing of the
    49,998 good rows is kept, neither items nor item stages nor search queue rows."""
    project = make_project()
    make_verify_stage(project)
    before = snapshot(project)
    rows = [line({"id": f"r{n:05d}", "text": f"Row {n}.", "n": n}) for n in range(1, 50_001)]
    rows[49_997] = line({"id": "r49998", "text": "bad \u0000 text"})  # NUL: not storable
    rows[49_998] = line({"id": "r00007", "text": "a repeated id"})
    batch = upload(project, "".join(rows).encode())
    assert batch.status == ImportBatch.Status.FAILED
    assert [(error["line"], error["code"]) for error in batch.errors] == [
        (49_998, "invalid_text"),
        (49_999, "duplicate_in_file"),
    ], batch.errors
    assert "used on line 7 and again on line 49999" in batch.errors[1]["message"]
    assert batch.rows_total == 50_000 and batch.error_count == 2
    assert snapshot(project) == before
    assert not Item.objects.filter(project=project).exists()


def test_items_of_a_big_file_get_ids_in_file_order():
    """The items' ids follow the file's order (the data manager and releases list items by
    id): 30,000 rows whose ids sort otherwise than their lines."""
    project = make_project()
    make_verify_stage(project)
    order = [f"{(n * 7919) % 30_000:05d}" for n in range(30_000)]
    batch = upload(project, "".join(line({"id": i, "text": "t"}) for i in order).encode())
    assert batch.status == "succeeded", batch.message
    stored = list(
        Item.objects.filter(project=project).order_by("pk").values_list("external_id", flat=True)
    )
    assert stored == order
    assert ItemStage.objects.filter(item__project=project).count() == 30_000


def test_an_import_writes_no_index_a_longer_one_makes_redundant_and_deleting_its_batch_unlinks():
    """Migrations 0020_import_write_lean and 0025_item_import_lean: the items' project and the
    item stages' item have no single-column index of their own (item_project_id_idx and
    item_stage_unique start with them); the item stages keep theirs on stage (the annotator
    loop's lease plans need it); the import batch link has no database constraint; deleting a
    batch still empties its items' link."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT tablename, indexdef FROM pg_indexes
               WHERE tablename IN ('annotation_item', 'annotation_itemstage')"""
        )
        definitions = cursor.fetchall()
        cursor.execute(
            """SELECT count(*) FROM pg_constraint
               WHERE conrelid = 'annotation_item'::regclass AND contype = 'f'
                 AND conkey = ARRAY[(SELECT attnum FROM pg_attribute
                                     WHERE attrelid = 'annotation_item'::regclass
                                       AND attname = 'import_batch_id')]"""
        )
        batch_constraints = cursor.fetchone()[0]
    single = {(table, d.split("USING btree ")[1]) for table, d in definitions if "USING btree" in d}
    assert ("annotation_item", "(project_id)") not in single
    assert ("annotation_itemstage", "(item_id)") not in single
    assert ("annotation_itemstage", "(item_id, stage_id)") in single
    assert ("annotation_itemstage", "(stage_id)") in single
    assert ("annotation_item", "(import_batch_id)") in single
    assert batch_constraints == 0
    project = make_project()
    batch = upload(project, line({"id": "a", "text": "x"}).encode())
    assert batch.status == "succeeded", batch.message
    batch.delete()
    assert list(Item.objects.filter(project=project).values_list("import_batch", flat=True)) == [
        None
    ]


@pytest.mark.django_db(transaction=True)
def test_foreign_keys_are_checked_once_and_every_check_is_back_after_the_import():
    """The items' INSERT and their opening run without PostgreSQL's per-row foreign-key checks
    (staged._foreign_keys_checked_once): the project and the stage they reference stay locked
    until the transaction ends, as the per-row checks would lock them, and every later
    statement of the transaction is checked again."""
    from django.db import DatabaseError, IntegrityError, connection, connections, transaction

    from annotation.models import ItemSearchPending, Project, Stage

    project = make_project()
    stage = make_verify_stage(project)
    rows = "".join(line({"id": f"r{n}", "text": "t"}) for n in range(50)).encode()
    with transaction.atomic():  # the import's transaction, still open below
        batch = upload(project, rows)
        assert batch.status == "succeeded", batch.message
        items = Item.objects.filter(project=project)
        assert ItemStage.objects.filter(item__in=items, stage=stage).count() == 50
        # The search queue's trigger fired in the import's replication role.
        assert ItemSearchPending.objects.filter(item_id__in=items.values("pk")).count() == 50
        with connection.cursor() as cursor:
            cursor.execute("SHOW session_replication_role")
            assert cursor.fetchone()[0] == "origin"
        other = connections.create_connection("default")
        try:
            with other.cursor() as cursor:
                for model, pk in ((Stage, stage.pk), (Project, project.pk)):
                    with pytest.raises(DatabaseError, match="could not obtain lock"):
                        cursor.execute(
                            f'SELECT 1 FROM "{model._meta.db_table}" WHERE id = %s '
                            "FOR UPDATE NOWAIT",
                            [pk],
                        )
        finally:
            other.close()
        # A later statement of the same transaction is checked as ever.
        with pytest.raises(IntegrityError), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            ItemStage.objects.create(
                item=items.first(), stage_id=stage.pk + 10_000, target_count=1, random_key=1
            )


def test_a_database_user_who_may_not_skip_the_checks_imports_with_them():
    """Without the privilege to set session_replication_role (not a superuser), the import
    keeps PostgreSQL's per-row checks and writes the same rows."""
    from django.db import connection

    project = make_project()
    make_verify_stage(project)
    with connection.cursor() as cursor:
        cursor.execute("CREATE ROLE rungwise_import_plain NOSUPERUSER")
        cursor.execute("GRANT ALL ON ALL TABLES IN SCHEMA public TO rungwise_import_plain")
        cursor.execute("GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO rungwise_import_plain")
        cursor.execute("SET ROLE rungwise_import_plain")
    try:
        from annotation.services import may_skip_row_checks

        assert not may_skip_row_checks()
        batch = upload(
            project, "".join(line({"id": f"p{n}", "text": "t"}) for n in range(20)).encode()
        )
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET ROLE")
    assert batch.status == "succeeded", batch.message
    assert ItemStage.objects.filter(item__project=project).count() == 20


def test_every_trigger_of_the_items_and_item_stages_fires_in_the_imports_role():
    """An import writes with session_replication_role = replica, which fires only triggers
    enabled ALWAYS: a trigger of our own left in its default mode would be skipped by imports
    (migration 0022_item_search_triggers_always)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT tgrelid::regclass::text, tgname, tgenabled FROM pg_trigger
               WHERE tgrelid IN ('annotation_item'::regclass, 'annotation_itemstage'::regclass)
                 AND NOT tgisinternal"""
        )
        triggers = cursor.fetchall()
    assert triggers, "the search queue's triggers are missing"
    assert [t for t in triggers if t[2] != "A"] == []


def test_a_reference_removed_meanwhile_refuses_by_name_and_leaves_the_checks_on():
    """A project or stage deleted between the import's reads and its writes: the lock finds no
    row, the import is refused in words (run.py turns StagedRejected into a failed batch,
    keeping nothing), and the block never runs without the per-row checks."""
    from django.db import connection, transaction

    from annotation.models import Stage
    from imports.services.staged import (
        _REMOVED_MEANWHILE,
        StagedRejected,
        _foreign_keys_checked_once,
    )

    project = make_project()
    stage = make_verify_stage(project)
    gone = stage.pk
    with transaction.atomic():
        Stage.objects.filter(pk=gone).delete()
        with pytest.raises(StagedRejected) as refused:
            with _foreign_keys_checked_once((Stage, gone)):
                pytest.fail("the block ran although its stage is gone")
        assert refused.value.message == _REMOVED_MEANWHILE
        assert "first stage was removed" in str(refused.value)
        with connection.cursor() as cursor:
            cursor.execute("SHOW session_replication_role")
            assert cursor.fetchone()[0] == "origin"
        transaction.set_rollback(True)
    assert Stage.objects.filter(pk=gone).exists()

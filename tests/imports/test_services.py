"""Imports through the Django service, task and management command: validate every row before
writing, keep nothing on failure, report located errors, duplicate policies, progress."""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from annotation.errors import ApplicationError
from annotation.models import Item, ItemRevision, ItemStage
from imports import services as imports
from imports.core import FieldSpec, RowSchema, register_schema
from imports.core.schema import SCHEMAS
from imports.models import ImportBatch
from imports.services import (
    ItemFields,
    import_batch_create,
    import_batch_errors,
    import_batch_progress,
    import_batch_run,
    import_batch_start,
    register_item_mapper,
    staged,
)
from imports.services import run as import_run
from imports.tasks import run_import
from review.causalt5k.schema import CAUSALT5K_SCHEMA
from tests.conftest import REPO, wait_for
from tests.factories import make_member, make_project, make_verify_stage

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def jsonl(*rows: dict) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def upload(project, data: bytes, filename: str, user=None, **options) -> ImportBatch:
    batch = import_batch_create(
        project=project, user=user, fileobj=io.BytesIO(data), filename=filename, options=options
    )
    return import_batch_run(batch_id=batch.pk)


def counts(project) -> tuple[int, int, int]:
    return (
        Item.objects.filter(project=project).count(),
        ItemStage.objects.filter(item__project=project).count(),
        ItemRevision.objects.filter(item__project=project).count(),
    )


def test_csv_import_creates_items_opens_them_and_records_the_file():
    project = make_project()
    stage = make_verify_stage(project)
    data = b"external_id,text,score\r\na1,The rain fell,3\r\na2,The river rose,4\r\n"
    batch = upload(project, data, "pairs.csv", user=make_member(project, "admin"))
    assert batch.status == ImportBatch.Status.SUCCEEDED, batch.message
    assert (batch.items_created, batch.items_updated, batch.rows_total) == (2, 0, 2)
    assert batch.sha256 == hashlib.sha256(data).hexdigest()
    assert batch.file_size == len(data) and batch.format == "csv"
    with batch.file.open("rb") as handle:
        assert handle.read() == data
    item = Item.objects.get(project=project, external_id="a1")
    # The generic schema keeps every column as it came (CSV cells are text).
    assert item.payload == {"text": "The rain fell", "score": "3"}
    assert item.import_batch == batch and item.source == "pairs.csv"
    assert ItemStage.objects.filter(stage=stage).count() == 2
    assert "2 new items" in batch.message


def test_utf8_bom_is_accepted():
    project = make_project()
    batch = upload(project, b"\xef\xbb\xbfexternal_id,text\na,b\n", "bom.csv")
    assert batch.status == ImportBatch.Status.SUCCEEDED
    assert Item.objects.get(project=project).external_id == "a"


def test_other_encodings_are_rejected_with_the_place_of_the_first_bad_byte():
    project = make_project()
    data = "external_id,text\na,caf\u00e9\n".encode("latin-1")
    batch = upload(project, data, "latin.csv")
    assert batch.status == ImportBatch.Status.FAILED
    assert counts(project) == (0, 0, 0)
    [error] = batch.errors
    assert error["code"] == "encoding" and error["line"] == 2
    assert "UTF-8" in error["message"]
    utf16 = upload(project, "external_id\na\n".encode("utf-16"), "wide.csv")
    assert utf16.status == ImportBatch.Status.FAILED and "UTF-16" in utf16.errors[0]["message"]


def test_a_failed_import_keeps_nothing_and_reports_every_bad_row():
    project = make_project(kind="causalt5k")
    make_verify_stage(project)
    good = {"id": "T1", "pearl_level": "L1", "scenario": "s", "label": "YES"}
    upload(project, jsonl(good), "first.jsonl")
    before = counts(project)
    rows = [
        {"id": "T2", "pearl_level": "L1", "scenario": "s", "label": "YES"},
        {"id": "T3", "pearl_level": "L4", "scenario": "s", "label": "YES"},
        {"id": "T4", "pearl_level": "L2", "label": "MAYBE"},
        {"id": "T5", "pearl_level": "L2", "scenario": "s", "label": "NO", "final_score": "eleven"},
    ]
    batch = upload(project, jsonl(*rows), "second.jsonl")
    assert batch.status == ImportBatch.Status.FAILED
    assert counts(project) == before
    assert batch.error_count == 4 and batch.items_created == 0
    found = [(error["line"], error["field"], error["code"]) for error in batch.errors]
    assert found == [
        (2, "pearl_level", "unknown_choice"),
        (3, "scenario", "required"),
        (3, "label", "unknown_choice"),
        (4, "final_score", "wrong_type"),
    ]
    level = batch.errors[0]
    assert level["expected"] == "one of L1, L2, L3" and level["found"] == "'L4'"
    assert "nothing was imported" in batch.message


def test_error_list_is_capped_and_the_true_count_kept():
    project = make_project()
    data = jsonl(*({"text": n} for n in range(imports.ERROR_CAP + 50)))
    batch = upload(project, data, "noids.jsonl")
    assert batch.status == ImportBatch.Status.FAILED
    assert batch.error_count == imports.ERROR_CAP + 50
    assert len(batch.errors) == imports.ERROR_CAP
    assert batch.errors[-1]["line"] == imports.ERROR_CAP


def test_duplicate_ids_are_rejected_or_updated_by_explicit_option():
    project = make_project()
    upload(project, jsonl({"id": "a", "text": "one"}, {"id": "b", "text": "two"}), "v1.jsonl")
    again = jsonl({"id": "a", "text": "ONE"}, {"id": "b", "text": "two"}, {"id": "c", "text": "3"})
    before = counts(project)
    rejected = upload(project, again, "v2.jsonl")
    assert rejected.status == ImportBatch.Status.FAILED and counts(project) == before
    assert [error["code"] for error in rejected.errors] == ["duplicate_existing"] * 2
    assert "duplicate policy" in rejected.errors[0]["message"]
    updated = upload(project, again, "v2.jsonl", duplicate_policy="update")
    assert updated.status == ImportBatch.Status.SUCCEEDED, updated.message
    assert (updated.items_created, updated.items_updated) == (1, 1)
    item = Item.objects.get(project=project, external_id="a")
    assert item.payload == {"text": "ONE"} and item.version == 2
    assert list(item.revisions.values_list("number", "payload")) == [
        (1, {"text": "one"}),
        (2, {"text": "ONE"}),
    ]
    assert Item.objects.get(project=project, external_id="b").version == 1  # unchanged


def test_an_id_twice_in_one_file_names_both_lines_whatever_the_policy():
    project = make_project()
    batch = upload(project, jsonl({"id": "a"}, {"id": "b"}, {"id": "a"}), "d.jsonl",
                   duplicate_policy="update")  # fmt: skip
    assert batch.status == ImportBatch.Status.FAILED
    [error] = batch.errors
    assert error["code"] == "duplicate_in_file" and "line 1 and again on line 3" in error["message"]


def test_second_pass_problem_rolls_everything_back(monkeypatch):
    """An id that appears in the project between validation and writing fails the batch, and the
    rows written before it in the same transaction disappear."""
    project = make_project()
    rows = [{"id": f"r{n:04d}"} for n in range(2500)]
    if connection.vendor == "postgresql":
        # One pass (imports.services.staged): the id turns up after the set-based check, inside
        # the import's transaction, so it goes too when the INSERT's conflict rolls it back.
        real_insert = staged._insert_new

        def racing_insert(batch, **kwargs):
            Item.objects.create(project=project, external_id="r2400", payload={})
            return real_insert(batch, **kwargs)

        monkeypatch.setattr(staged, "_insert_new", racing_insert)
        batch = upload(project, jsonl(*rows), "race.jsonl")
        assert batch.status == ImportBatch.Status.FAILED
        assert "Nothing was imported" in batch.message
        assert not Item.objects.filter(project=project).exists()
        return
    real_write = import_run._write

    def racing_write(batch, *args, **kwargs):
        Item.objects.create(project=project, external_id="r2400", payload={})
        return real_write(batch, *args, **kwargs)

    monkeypatch.setattr(import_run, "_write", racing_write)
    batch = upload(project, jsonl(*rows), "race.jsonl")
    assert batch.status == ImportBatch.Status.FAILED
    assert "Nothing was imported" in batch.message
    assert list(Item.objects.filter(project=project).values_list("external_id", flat=True)) == [
        "r2400"
    ]


def test_bad_options_and_files_are_refused_before_anything_is_stored(media):
    project = make_project()
    cases = [
        ({"filename": "x.txt"}, "Cannot tell the format"),
        ({"filename": "x.csv", "options": {"duplicate_policy": "merge"}}, "duplicate policy"),
        ({"filename": "x.csv", "options": {"layout": "release"}}, "items.jsonl"),
        ({"filename": "", "data": b"x"}, "Choose a file"),
        ({"filename": "empty.jsonl", "data": b""}, "is empty"),
    ]
    for case, phrase in cases:
        with pytest.raises(ApplicationError) as caught:
            import_batch_create(
                project=project,
                user=None,
                fileobj=io.BytesIO(case.get("data", b"id\na\n")),
                filename=case["filename"],
                options=case.get("options"),
            )
        assert phrase in caught.value.message, (case, caught.value.message)
    assert ImportBatch.objects.count() == 0
    stored = list(Path(media).rglob("*.*")) if Path(media).exists() else []
    assert stored == []


def test_running_a_batch_twice_leaves_the_first_result(django_capture_on_commit_callbacks):
    project = make_project()
    batch = import_batch_create(
        project=project, user=None, fileobj=io.BytesIO(jsonl({"id": "a"})), filename="a.jsonl"
    )
    with django_capture_on_commit_callbacks(execute=True):
        started = import_batch_start(batch=batch, run_inline=False)
    assert started.status == ImportBatch.Status.PENDING
    batch.refresh_from_db()
    assert batch.status == ImportBatch.Status.SUCCEEDED
    finished_at = batch.finished_at
    assert run_import(batch.pk) == "succeeded"
    batch.refresh_from_db()
    assert batch.finished_at == finished_at and Item.objects.filter(project=project).count() == 1


def test_a_batch_abandoned_by_a_dead_worker_runs_again():
    project = make_project()
    batch = import_batch_create(
        project=project, user=None, fileobj=io.BytesIO(jsonl({"id": "a"})), filename="a.jsonl"
    )
    ImportBatch.objects.filter(pk=batch.pk).update(status="writing", started_at=None)
    assert import_batch_run(batch_id=batch.pk).status == ImportBatch.Status.SUCCEEDED


def test_progress_is_half_validation_half_writing():
    from datetime import timedelta

    from django.utils import timezone

    now = timezone.now()
    batch = ImportBatch(status="validating", file_size=1000, bytes_done=500, rows_done=400,
                        started_at=now - timedelta(seconds=4))  # fmt: skip
    progress = import_batch_progress(batch, now=now)
    assert progress.percent == pytest.approx(25.0)
    assert progress.rows_per_second == pytest.approx(100.0)
    assert progress.eta_seconds == pytest.approx(12.0)
    batch.status, batch.rows_total, batch.rows_written = "writing", 800, 400
    batch.validated_at = now - timedelta(seconds=2)
    progress = import_batch_progress(batch, now=now)
    assert progress.percent == pytest.approx(75.0)
    assert progress.rows_per_second == pytest.approx(200.0)
    assert progress.eta_seconds == pytest.approx(4 / 3)
    batch.rows_written = 0
    assert import_batch_progress(batch, now=now).percent is None  # not visible yet: unknown


def test_kind_schema_and_item_mapper_plug_in():
    register_schema(
        "test-pairs",
        RowSchema(
            name="test-pairs",
            external_id_field="pair_id",
            extra_fields="reject",
            fields=(
                FieldSpec("pair_id", "str", required=True),
                FieldSpec("sentence", "str", required=True),
                FieldSpec("family", "str"),
                FieldSpec("check", "bool", default=False),
            ),
        ),
    )

    def mapper(clean, schema, options):
        if clean["sentence"].startswith("!"):
            raise ValueError("Sentences must not start with '!'.")
        return ItemFields(
            payload={"sentence": clean["sentence"]},
            group=clean.get("family") or "",
            purpose="attention_check" if clean["check"] else "regular",
        )

    register_item_mapper("test-pairs", mapper)
    try:
        project = make_project(kind="test-pairs")
        refused = upload(project, jsonl({"pair_id": "p", "sentence": "!x"}), "a.jsonl")
        assert refused.status == "failed" and "must not start" in refused.errors[0]["message"]
        data = jsonl(
            {"pair_id": "p1", "sentence": "A so B", "family": "f1"},
            {"pair_id": "p2", "sentence": "B so A", "family": "f1", "check": True},
        )
        batch = upload(project, data, "b.jsonl")
        assert batch.status == "succeeded", batch.errors
        items = {item.external_id: item for item in Item.objects.filter(project=project)}
        assert items["p1"].group == items["p2"].group == "f1"
        assert (items["p1"].purpose, items["p2"].purpose) == ("regular", "attention_check")
        unknown = upload(project, jsonl({"pair_id": "p3", "sentence": "s", "x": 1}), "c.jsonl")
        assert unknown.errors[0]["code"] == "unknown_field"
    finally:
        SCHEMAS.pop("test-pairs")
        imports.ITEM_MAPPERS.pop("test-pairs")


def test_default_mapper_takes_group_and_purpose_from_named_columns():
    project = make_project()
    data = b"id,text,family,role\na,x,f1,practice\nb,y,f1,regular\n"
    batch = upload(project, data, "p.csv", group_field="family", purpose_field="role")
    assert batch.status == "succeeded"
    a = Item.objects.get(project=project, external_id="a")
    assert (a.group, a.purpose) == ("f1", "practice")
    bad = upload(project, b"id,role\nc,bonus\n", "q.csv", purpose_field="role",
                 duplicate_policy="update")  # fmt: skip
    assert bad.status == "failed" and "bonus" in bad.errors[0]["message"]


def test_management_command(tmp_path, capsys):
    project = make_project(slug="cmd")
    good = tmp_path / "items.jsonl"
    good.write_bytes(jsonl({"id": "a", "text": "x"}))
    call_command("import_items", "cmd", str(good))
    assert "1 new item." in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text('[{"id": "b"},\n {"id": "c",}]')
    with pytest.raises(CommandError) as caught:
        call_command("import_items", "cmd", str(bad))
    err = capsys.readouterr().err
    assert "line 2" in err and "nothing was imported" in str(caught.value)
    assert Item.objects.filter(project=project).count() == 1


@pytest.mark.shared_data
def test_real_causalt5k_submissions_fail_exactly_where_the_json_breaks(shared_datasets):
    folder = shared_datasets / "CausalT5k" / "raw_submissions"
    if not folder.is_dir():
        pytest.skip("CausalT5k raw submissions not present")
    expected_broken = {
        "groupD-submission-08.json": ("line 455, column 44", 'invalid escape "\\$"'),
        "groupD-submission-11.json": ("line 26, column 1", "second JSON value"),
    }
    project = make_project(kind="causalt5k")
    results = {}
    for name in ["groupD-submission-08.json", "groupD-submission-11.json",
                 "groupA-submission-07.json", "groupJ-submission-24.jsonl"]:  # fmt: skip
        results[name] = upload(project, (folder / name).read_bytes(), name)
    for name, (place, words) in expected_broken.items():
        batch = results[name]
        assert batch.status == "failed"
        [syntax] = [error for error in batch.errors if error["code"] == "json_syntax"]
        assert syntax["message"].startswith(place) and words in syntax["message"]
        # Reading stops there; rows before it are still checked and reported.
        assert batch.errors[-1] == syntax
    # The JSON Lines file is valid as JSON Lines and fits the CausalT5k columns, but a project's
    # rows are held to the trap vocabulary: its free-text trap types ("COUNTERFACTUAL", …) are
    # refused, each naming the allowed codes, and nothing is written. A release import reads
    # them as spelt and reports them (review.causalt5k.normalise).
    jsonl_batch = results["groupJ-submission-24.jsonl"]
    assert jsonl_batch.status == "failed" and jsonl_batch.items_created == 0
    assert {error["field"] for error in jsonl_batch.errors} == {"trap_type"}
    refused = {error["found"]: error["message"] for error in jsonl_batch.errors}
    assert "is not a trap type; allowed: W1, W2" in refused["'COUNTERFACTUAL'"]
    assert not Item.objects.filter(project=project).exists()
    assert CAUSALT5K_SCHEMA.name == "causalt5k"


@pytest.mark.celery_worker
def test_large_file_runs_on_the_worker_with_progress(celery_worker, settings, tmp_path):
    """Above the inline threshold the upload returns at once and a real worker imports it."""
    settings.RUNGWISE_IMPORT_INLINE_MAX_BYTES = 1024
    # The worker process has the environment's MEDIA_ROOT, not this test's override.
    settings.MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT") or REPO / "var" / "media")
    project = make_project()
    make_verify_stage(project)
    data = jsonl(*({"id": f"w{n:05d}", "text": "x" * 40} for n in range(20_000)))
    batch = import_batch_create(
        project=project, user=None, fileobj=io.BytesIO(data), filename="big.jsonl"
    )
    assert import_batch_start(batch=batch).status == ImportBatch.Status.PENDING
    seen = set()

    def done():
        batch.refresh_from_db()
        seen.add(batch.status)
        return batch.status in ("succeeded", "failed")

    wait_for(done, timeout=120, interval=0.05)
    assert batch.status == "succeeded", batch.message
    assert batch.items_created == 20_000 and batch.rows_written == 20_000
    assert ItemStage.objects.filter(item__project=project).count() == 20_000
    assert seen & {"pending", "validating", "writing"}
    batch.file.delete(save=False)


def test_groups_are_spread_as_a_whole_across_write_batches():
    """Items of one group arrive in different write batches; they are opened together, so the
    group's size and its distinct ranks cover the whole file."""
    project = make_project()
    stage = make_verify_stage(project)
    rows = [
        {"id": f"r{n:05d}", "text": "x", "family": "big" if n % 500 == 0 else ""}
        for n in range(2600)
    ]
    batch = upload(project, jsonl(*rows), "groups.jsonl", group_field="family")
    assert batch.status == "succeeded", batch.message
    big = ItemStage.objects.filter(stage=stage, item__group="big")
    assert sorted(big.values_list("spread_rank", flat=True)) == [0, 1, 2, 3, 4, 5]
    assert set(big.values_list("group_size", flat=True)) == {6}
    loose = ItemStage.objects.filter(stage=stage, item__group="")
    assert loose.count() == 2594 and set(loose.values_list("group_size", flat=True)) == {1}
    keys = set(ItemStage.objects.filter(stage=stage).values_list("random_key", flat=True))
    assert len(keys) > 2500 and all(0 <= key < 2**31 for key in keys)


def test_rows_without_any_field_the_stages_show_are_refused_naming_them():
    """A generic project's file must give annotators something to see: a CSV without the
    fields its stages show (here the pair task's sentence_a / sentence_b, or text) is refused,
    every such row named, and nothing is imported."""
    project = make_project()
    make_verify_stage(project)
    data = b"id,colour\nr1,red\nr2,blue\n"
    batch = upload(project, data, "bad.csv")
    assert batch.status == "failed"
    errors = import_batch_errors(batch)
    assert [error.line for error in errors] == [2, 3]
    assert "none of the fields this project's stages show" in errors[0].message
    assert "sentence_a" in errors[0].message and not Item.objects.filter(project=project).exists()
    good = upload(project, b"id,sentence_a,sentence_b\nr1,A fell.,B broke.\n", "good.csv")
    assert good.status == "succeeded"


def test_the_import_page_lists_the_columns_and_offers_a_sample_that_imports(client):
    from django.urls import reverse

    from annotation.models import Role
    from tests.factories import make_member

    project = make_project()
    make_verify_stage(project)
    client.force_login(make_member(project, role=Role.ADMIN))
    page = client.get(reverse("imports:imports", args=[project.slug])).content.decode()
    assert "What a file needs" in page and "<code>sentence_a</code>" in page
    sample = client.get(reverse("imports:sample", args=[project.slug]))
    assert sample["Content-Disposition"].endswith('-sample.csv"')
    content = b"".join(sample.streaming_content)
    assert upload(project, content, "sample.csv").status == "succeeded"
    assert Item.objects.filter(project=project).count() == 2


def test_the_import_page_names_the_schema_rows_are_checked_against(client):
    from django.urls import reverse

    from annotation.models import Role
    from tests.factories import make_member

    project = make_project()
    make_verify_stage(project)
    client.force_login(make_member(project, role=Role.ADMIN))
    page = client.get(reverse("imports:imports", args=[project.slug])).content.decode()
    assert "One item per row (generic schema)" in page  # was "( schema)"

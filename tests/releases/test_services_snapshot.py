"""A release is read from one snapshot of the database: annotation that goes on while it builds
(items finishing, annotations arriving) lands in all of its files or in none. PostgreSQL: the build's reads run in one REPEATABLE READ, READ ONLY transaction, whose snapshot a second
connection imports to write the annotation files meanwhile."""

from __future__ import annotations

import csv
import io
import json
import threading
import zipfile

import pyarrow.parquet as pq
import pytest
from django.db import connection

from annotation.models import Annotation, Item, ItemStage
from releases.models import Release
from releases.services import build as release_building
from releases.services import release_build
from tests.factories import make_items, make_project, make_verify_stage

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def _finish_one_more_item(item_pk: int, item_stage_pk: int) -> None:
    """From another connection (as an annotator's request would): an annotation arrives and
    the item is accepted, committed at once."""

    def work():
        from annotation.models import Annotation, Item

        Annotation.objects.create(
            item_stage_id=item_stage_pk, external_rater="late", payload={"value": "keep"}
        )
        Item.objects.filter(pk=item_pk).update(status=Item.Status.ACCEPTED)
        connection.close()

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()


def spy(function, calls: list):
    def called(*args, **kwargs):
        calls.append(args)
        return function(*args, **kwargs)

    return called


def test_work_committed_during_a_build_is_in_every_file_or_in_none(monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: run through `make test` (scripts/with-services.sh)")
    project = make_project(slug="torn")
    make_verify_stage(project, overlap=1)
    items = make_items(project, 4)
    for item in items[:3]:
        stage = ItemStage.objects.get(item=item)
        Annotation.objects.create(
            item_stage=stage, external_rater="early", payload={"value": "keep"}
        )
    Item.objects.filter(pk__in=[item.pk for item in items[:3]]).update(status=Item.Status.ACCEPTED)
    late = items[3]
    late_stage = ItemStage.objects.get(item=late)
    release = Release.objects.create(project=project, version=1, status=Release.Status.BUILDING)

    # Once the build's snapshot is taken (and the annotation files are being written on a
    # second connection that reads the same snapshot), the fourth item is finished.
    original = release_building.release_item_files
    fired = []

    def item_files_after_more_work(*args, **kwargs):
        if not fired:
            fired.append(True)
            _finish_one_more_item(late.pk, late_stage.pk)
        return original(*args, **kwargs)

    monkeypatch.setattr(release_building, "release_item_files", item_files_after_more_work)
    second_connection = []
    monkeypatch.setattr(release_building, "_in_snapshot", spy(release_building._in_snapshot,
                                                              second_connection))  # fmt: skip
    built = release_build(release_id=release.pk)
    assert fired and built.status == Release.Status.PUBLISHED, built.message

    with built.archive.open("rb") as raw, zipfile.ZipFile(raw) as archive:

        def member(name):
            return next(n for n in archive.namelist() if n.endswith("/" + name))

        def read(name):
            return archive.read(member(name)).decode("utf-8")

        jsonl_ids = {json.loads(line)["external_id"] for line in read("items.jsonl").splitlines()}
        csv_ids = {row["external_id"] for row in csv.DictReader(io.StringIO(read("items.csv")))}
        annotated = {
            json.loads(line)["external_id"] for line in read("annotations.jsonl").splitlines()
        }
        annotated_csv = {
            row["external_id"] for row in csv.DictReader(io.StringIO(read("annotations.csv")))
        }
        parquet_ids = {
            stem: {
                row["external_id"]
                for row in pq.read_table(io.BytesIO(archive.read(member(f"{stem}.parquet"))))
                .select(["external_id"])
                .to_pylist()
            }
            for stem in ("items", "annotations")
        }
    first_three = {item.external_id for item in items[:3]}
    assert jsonl_ids == csv_ids == annotated == annotated_csv == first_three
    assert parquet_ids == {"items": first_three, "annotations": first_three}
    assert second_connection  # the annotation files were read on another connection
    assert built.stats["items"] == 3 and built.stats["annotations"] == 3
    assert sum(built.stats["items_by_status"].values()) == 3

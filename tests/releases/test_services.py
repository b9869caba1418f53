"""Releases: publish → build (Celery task) → immutable, checksummed zip with items, annotations,
datasheet, manifest, kind layout and a diff; round trip through the importer; tampering."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import tracemalloc
import zipfile
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from agreement.models import AgreementSnapshot
from annotation import services
from annotation.errors import ApplicationError, Conflict
from annotation.models import Annotation, Item, ItemStage, Resolution, Role
from imports.services import import_batch_create, import_batch_run
from releases import layouts
from releases import services as release_services
from releases.models import Release
from releases.parquet import parquet_text
from releases.services import build as release_building
from releases.services import release_build, release_datasheet, release_publish
from releases.services import rows as release_rows
from releases.writers import Manifest, write_csv, write_jsonl
from tests.factories import make_items, make_member, make_project, make_verify_stage

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def annotate(stage, people, values, on_commit):
    """Each person annotates every item they get, answering values[person index]."""
    for person, value in zip(people, values, strict=True):
        while True:
            fetched = services.assignment_next(annotator=person, stage=_for(person, stage))
            if fetched is None:
                break
            with on_commit(execute=True):
                services.annotation_submit(
                    assignment_id=fetched.pk,
                    annotator=person,
                    payload={"value": value(fetched.item_stage.item) if callable(value) else value},
                )


def _for(person, stage):
    from annotation.access import access_stage_for_annotator

    return access_stage_for_annotator(user=person, stage_id=stage.pk)


@pytest.fixture
def finished(django_capture_on_commit_callbacks):
    """A one-stage project whose 6 items are resolved: 4 kept (2 unanimous, 2 by majority),
    2 rejected and discarded; plus an agreement snapshot and an admin."""
    project = make_project(slug="pairs", description="Cause-effect pairs.")
    project.citation = "@article{pairs2026, title={Pairs}}"
    project.save(update_fields=["citation"])
    stage = make_verify_stage(project, overlap=3)
    make_items(project, 6, group_size=2)
    people = [make_member(project, Role.ANNOTATOR, f"secret-name-{n}") for n in range(3)]

    def third(item):
        number = int(item.external_id[-1])
        return "reject" if number in (2, 3) else "keep"

    def second(item):
        return "reject" if int(item.external_id[-1]) in (2, 3, 4, 5) else "keep"

    annotate(stage, people, ["keep", second, third], django_capture_on_commit_callbacks)
    AgreementSnapshot.objects.create(
        stage=stage, metric="fleiss_kappa", value=0.41, ci_low=0.12, ci_high=0.70,
        n_items=6, n_annotators=3, n_annotations=18,
    )  # fmt: skip
    admin = make_member(project, Role.ADMIN, "the-admin")
    return project, stage, people, admin


def publish(project, user, on_commit, **kwargs) -> Release:
    with on_commit(execute=True):
        release = release_publish(project=project, user=user, **kwargs)
    release.refresh_from_db()
    return release


def open_zip(release: Release) -> zipfile.ZipFile:
    with release.archive.open("rb") as handle:
        return zipfile.ZipFile(io.BytesIO(handle.read()))


def readable_text(archive: zipfile.ZipFile, name: str) -> str:
    """A file of the archive as text; a Parquet file's cells (it is compressed)."""
    data = archive.read(name)
    return parquet_text(data) if name.endswith(".parquet") else data.decode("utf-8")


def member(archive: zipfile.ZipFile, name: str) -> bytes:
    [path] = [entry for entry in archive.namelist() if entry.split("/", 1)[1] == name]
    return archive.read(path)


def test_publish_builds_an_immutable_checksummed_release(
    finished, django_capture_on_commit_callbacks
):
    project, stage, people, admin = finished
    release = publish(project, admin, django_capture_on_commit_callbacks, notes="First cut.")
    assert release.status == Release.Status.PUBLISHED, release.message
    assert release.version == 1 and release.published_at is not None
    with release.archive.open("rb") as handle:
        assert hashlib.sha256(handle.read()).hexdigest() == release.sha256
    archive = open_zip(release)
    names = sorted(entry.split("/", 1)[1] for entry in archive.namelist())
    assert names == sorted(
        ["items.jsonl", "items.csv", "annotations.jsonl", "annotations.csv", "items.parquet",
         "annotations.parquet", "README.md", "manifest.json", "SHA256SUMS",
         # the Hugging Face dataset folder (releases/hf_dataset.py): the default configuration
         "hf_dataset/README.md", "hf_dataset/data/default/train-00000-of-00001.parquet"]
    )  # fmt: skip
    assert {entry.split("/")[0] for entry in archive.namelist()} == {"pairs-v1"}
    # Every file the manifest lists has the recorded digest.
    manifest = Manifest.from_dict(release.manifest)
    for name, entry in manifest.entries.items():
        assert hashlib.sha256(member(archive, name)).hexdigest() == entry.sha256, name
    assert json.loads(member(archive, "manifest.json")) == release.manifest

    rows = [json.loads(line) for line in member(archive, "items.jsonl").splitlines()]
    accepted = Item.objects.filter(project=project, status="accepted")
    assert [row["external_id"] for row in rows] == sorted(
        accepted.values_list("external_id", flat=True)
    )
    assert len(rows) == 4 and release.stats["items"] == 4
    by_id = {row["external_id"]: row for row in rows}
    unanimous = by_id["item-00000"]["stages"]["verify"]
    assert unanimous == {
        "state": "resolved", "value": "keep", "status": "unanimous", "outcome": "accept",
        "n_annotations": 3, "votes": {"keep": 3}, "agreement": 1.0, "adjudicated": False,
    }  # fmt: skip
    majority = by_id["item-00004"]["stages"]["verify"]
    assert majority["votes"] == {"keep": 2, "reject": 1}
    assert majority["agreement"] == pytest.approx(2 / 3, abs=1e-6)
    assert by_id["item-00000"]["payload"] == Item.objects.get(external_id="item-00000").payload

    # Annotations carry pseudonyms, never names, in every file of the release.
    annotation_rows = [
        json.loads(line) for line in member(archive, "annotations.jsonl").splitlines()
    ]
    assert len(annotation_rows) == 12 == release.stats["annotations"]
    assert {row["rater"] for row in annotation_rows} == {"R0001", "R0002", "R0003"}
    for name in archive.namelist():
        text = readable_text(archive, name)
        assert "secret-name" not in text and "the-admin" not in text, name

    csv_text = member(archive, "items.csv").decode("utf-8")
    header = csv_text.splitlines()[0].split(",")
    assert header[:6] == ["external_id", "status", "purpose", "group", "source", "version"]
    assert "payload.text" in header and "stages.verify.value" in header

    readme = member(archive, "README.md").decode("utf-8")
    assert readme == release_datasheet(release)
    assert "# Pairs — release v1" in readme and "First cut." in readme
    assert "| annotator | 3 |" in readme and "| **total** | 3 |" in readme
    assert "| Verify | verify | 3 | 6 | 4 | 66.7 % |" in readme
    # κ over the 4 released items (kept: 3-0, 3-0, 2-1, 2-1) is −0.200; the stored snapshot
    # (0.41) and the 6 items with the 2 discarded ones (κ 0.000) are other scopes.
    computed = release.stats["stages"][0]["agreement"]
    assert computed["metric"] == "fleiss_kappa" and computed["scope"] == "released items"
    assert computed["value"] == pytest.approx(-0.2) and computed["n_items"] == 4
    stamp = datetime.fromisoformat(computed["computed_at"])
    assert stamp.utcoffset() == timedelta(0)
    assert abs(stamp - release.published_at) < timedelta(minutes=1)
    assert "| Verify | Fleiss' κ | -0.200 | " in readme and "0.410" not in readme
    assert f"Computed at {computed['computed_at']} (UTC), when this release was built" in readme
    assert "over the annotations of exactly the items it holds" in readme
    assert "CC-BY-4.0" in readme and "@article{pairs2026" in readme
    assert release.stats["diff"] is None


def test_a_second_publish_of_a_version_is_refused_and_a_release_never_changes(
    finished, django_capture_on_commit_callbacks
):
    project, stage, people, admin = finished
    first = publish(project, admin, django_capture_on_commit_callbacks)
    with pytest.raises(Conflict) as caught:
        release_publish(project=project, user=admin, version=1)
    assert caught.value.status == 409 and "already published" in caught.value.message
    with pytest.raises(ApplicationError) as wrong:
        release_publish(project=project, user=admin, version=7)
    assert "next version" in wrong.value.message and wrong.value.status == 400
    # Building the published release again changes nothing.
    again = release_build(release_id=first.pk)
    assert (again.sha256, again.archive.name, again.published_at) == (
        first.sha256, first.archive.name, first.published_at,
    )  # fmt: skip
    assert Release.objects.filter(project=project).count() == 1


def test_publishing_while_a_version_builds_is_refused(finished):
    project, _, _, admin = finished
    release = release_publish(project=project, user=admin)  # on-commit build never runs here
    assert release.status == Release.Status.BUILDING
    with pytest.raises(Conflict) as caught:
        release_publish(project=project, user=admin)
    assert "still being built" in caught.value.message


def test_an_empty_project_cannot_be_released():
    project = make_project()
    make_items(project, 2)
    with pytest.raises(ApplicationError) as caught:
        release_publish(project=project, user=None)
    assert "no finished items" in caught.value.message


def test_a_failed_build_keeps_its_reason_and_its_version_is_reused(
    finished, django_capture_on_commit_callbacks, monkeypatch
):
    project, _, _, admin = finished

    def broken(project, out_dir):
        raise RuntimeError("disk full")

    monkeypatch.setattr(release_building, "release_annotation_files", broken)
    failed = publish(project, admin, django_capture_on_commit_callbacks)
    assert failed.status == Release.Status.FAILED and "disk full" in failed.message
    assert not failed.archive
    monkeypatch.undo()
    retried = publish(project, admin, django_capture_on_commit_callbacks)
    assert (retried.pk, retried.version, retried.status) == (failed.pk, 1, "published")


def test_diff_against_the_previous_version(finished, django_capture_on_commit_callbacks):
    project, stage, people, admin = finished
    publish(project, admin, django_capture_on_commit_callbacks)
    changed = Item.objects.get(project=project, external_id="item-00001")
    services.item_revise(item=changed, payload={"text": "Edited."}, author=admin, reason="typo")
    Item.objects.filter(project=project, external_id="item-00004").update(status="discarded")
    services.items_create(
        project=project, rows=[{"external_id": "item-00099", "payload": {"text": "New"}}]
    )
    annotate(stage, people, ["keep"] * 3, django_capture_on_commit_callbacks)
    second = publish(project, admin, django_capture_on_commit_callbacks)
    assert second.version == 2 and second.status == "published", second.message
    diff = second.stats["diff"]
    assert diff["previous_version"] == 1
    assert (diff["added"], diff["removed"], diff["changed"], diff["unchanged"]) == (1, 1, 1, 2)
    assert diff["ids"] == {
        "added": ["item-00099"], "removed": ["item-00004"], "changed": ["item-00001"],
    }  # fmt: skip
    readme = release_datasheet(second)
    assert "Changes since v1: 1 items added, 1 removed, 1 changed." in readme


def test_round_trip_reimporting_a_release_reproduces_items_and_values(
    finished, django_capture_on_commit_callbacks, tmp_path
):
    project, stage, people, admin = finished
    Item.objects.filter(project=project, external_id="item-00000").update(purpose="practice")
    release = publish(project, admin, django_capture_on_commit_callbacks)
    items_jsonl = member(open_zip(release), "items.jsonl")
    fresh = make_project(slug="fresh")
    fresh_stage = make_verify_stage(fresh)
    batch = import_batch_create(
        project=fresh, user=admin, fileobj=io.BytesIO(items_jsonl), filename="pairs-v1-items.jsonl",
        options={"layout": "release"},
    )  # fmt: skip
    batch = import_batch_run(batch_id=batch.pk)
    assert batch.status == "succeeded", batch.errors
    fields = ("external_id", "payload", "group", "purpose")
    original = list(
        Item.objects.filter(project=project, status="accepted")
        .order_by("external_id")
        .values_list(*fields)
    )
    copied = list(Item.objects.filter(project=fresh).order_by("external_id").values_list(*fields))
    assert copied == original and len(copied) == 4
    assert ItemStage.objects.filter(stage=fresh_stage).count() == 4
    # The copy's payloads are value-for-value the release's (types included).
    released = {
        row["external_id"]: row["payload"] for row in map(json.loads, items_jsonl.splitlines())
    }
    assert {
        item.external_id: item.payload for item in Item.objects.filter(project=fresh)
    } == released


def test_kind_layout_plug_in_adds_files_to_the_release(
    finished, django_capture_on_commit_callbacks
):
    project, _, _, admin = finished
    project.kind = "test-layout"
    project.save(update_fields=["kind"])

    def layout(context):
        means = context.out_dir / "benchmark.csv"
        entry = write_csv(
            ({"id": row["external_id"], "agree": row["stages"]["verify"]["agreement"]}
             for row in context.items()),
            means,
            columns=["id", "agree"],
        )  # fmt: skip
        other = context.out_dir / "raters.jsonl"
        write_jsonl(({"rater": row["rater"]} for row in context.annotations()), other)
        return [entry, other]

    layouts.register_layout("test-layout", layout)
    try:
        release = publish(project, admin, django_capture_on_commit_callbacks)
        assert release.status == "published", release.message
        archive = open_zip(release)
        assert member(archive, "benchmark.csv").decode().splitlines()[0] == "id,agree"
        names = [entry["name"] for entry in release.manifest["files"]]
        assert "benchmark.csv" in names and "raters.jsonl" in names
        assert "`benchmark.csv`" in release_datasheet(release)

        def clobbering(context):
            path = context.out_dir / "items.csv"
            path.write_text("nothing")
            return [path]

        layouts.register_layout("test-layout", clobbering)
        failed = publish(project, admin, django_capture_on_commit_callbacks)
        assert failed.status == "failed" and "items.csv" in failed.message

        def nested(context):  # sub-folders keep their path in the release (D1/D1_L1.json)
            folder = context.out_dir / "D1"
            folder.mkdir()
            (folder / "D1_L1.json").write_text("[]")
            return [folder / "D1_L1.json"]

        layouts.register_layout("test-layout", nested)
        nested_release = publish(project, admin, django_capture_on_commit_callbacks)
        assert nested_release.status == "published", nested_release.message
        assert "D1/D1_L1.json" in [e["name"] for e in nested_release.manifest["files"]]
        assert member(open_zip(nested_release), "D1/D1_L1.json") == b"[]"

        def outside(context):
            path = context.out_dir.parent / "elsewhere.json"
            path.write_text("[]")
            return [path]

        layouts.register_layout("test-layout", outside)
        failed = publish(project, admin, django_capture_on_commit_callbacks)
        assert failed.status == "failed" and "elsewhere.json" in failed.message
    finally:
        layouts.LAYOUTS.pop("test-layout", None)


def test_export_memory_is_flat_in_the_number_of_annotations(monkeypatch, tmp_path):
    """Peak traced memory of streaming annotations to JSONL barely moves from 1,500 to 6,000
    annotations: rows are fetched in fixed-size chunks and written one at a time."""
    monkeypatch.setattr(release_rows, "ANNOTATION_CHUNK", 300)
    monkeypatch.setattr(release_rows, "ITEM_CHUNK", 100)

    def peak(items: int) -> tuple[int, int]:
        project = make_project()
        stage = make_verify_stage(project, overlap=5)
        make_items(project, items)
        item_stages = list(ItemStage.objects.filter(stage=stage))
        Annotation.objects.bulk_create(
            Annotation(item_stage=item_stage, external_rater=f"rater-{n}",
                       payload={"value": "keep", "comment": "x" * 50})
            for item_stage in item_stages
            for n in range(5)
        )  # fmt: skip
        Resolution.objects.bulk_create(
            Resolution(item_stage=item_stage, value="keep", status="unanimous",
                       outcome="accept", votes={"keep": 5}, n_annotations=5, policy="majority")
            for item_stage in item_stages
        )  # fmt: skip
        Item.objects.filter(project=project).update(status="accepted")
        tracemalloc.start()
        entry = write_jsonl(release_services.release_annotation_rows(project), tmp_path / "a.jsonl")
        write_jsonl(release_services.release_item_rows(project), tmp_path / "i.jsonl")
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top, entry.rows

    small, rows_small = peak(300)
    large, rows_large = peak(1200)
    assert (rows_small, rows_large) == (1500, 6000)
    assert large < 1.3 * small + 64 * 1024, (small, large)


def test_release_files_are_not_served_from_media_by_url(
    finished, django_capture_on_commit_callbacks
):
    """The archive sits under MEDIA_ROOT but the project serves no MEDIA_URL route: downloads
    go through the permission-checked view only."""
    project, _, _, admin = finished
    release = publish(project, admin, django_capture_on_commit_callbacks)
    from django.test import Client

    response = Client().get("/media/" + release.archive.name)
    assert response.status_code in (302, 404)
    assert Path(release.archive.path).is_file()


def test_the_annotation_files_carry_exactly_the_rows(finished, tmp_path):
    """annotations.jsonl/.csv are written by COPY on PostgreSQL and by Python on SQLite; parsed
    back, every line holds the row the layouts get (keys, values, order)."""
    from datetime import datetime

    project, stage, people, admin = finished
    rows = list(release_services.release_annotation_rows(project))
    release_services.release_annotations_jsonl(project, tmp_path / "a.jsonl")
    release_services.release_annotations_csv(project, tmp_path / "a.csv")
    lines = (tmp_path / "a.jsonl").read_text("utf-8").splitlines()

    def comparable(row):
        return {**row, "created_at": datetime.fromisoformat(row["created_at"])}

    assert [comparable(json.loads(line)) for line in lines] == list(map(comparable, rows))
    assert [list(json.loads(line)) for line in lines] == [list(row) for row in rows]
    assert len(rows) == 12
    table = list(csv.DictReader(io.StringIO((tmp_path / "a.csv").read_text("utf-8"))))
    assert [row["rater"] for row in table] == [row["rater"] for row in rows]
    assert [row["value"] for row in table] == [row["value"] for row in rows]


def test_every_timestamp_of_the_annotation_files_states_its_time_zone(finished, tmp_path):
    """created_at in annotations.csv/.jsonl is ISO 8601 in UTC with an explicit offset, on
    PostgreSQL (COPY) and on SQLite (Python) alike: a spreadsheet or pandas reads one moment."""
    from datetime import datetime, timedelta

    project, *_ = finished
    release_services.release_annotations_csv(project, tmp_path / "a.csv")
    release_services.release_annotations_jsonl(project, tmp_path / "a.jsonl")
    table = list(csv.DictReader(io.StringIO((tmp_path / "a.csv").read_text("utf-8"))))
    lines = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text("utf-8").splitlines()]
    stamps = [row["created_at"] for row in table] + [row["created_at"] for row in lines]
    assert len(stamps) == 24
    for stamp in stamps:
        assert "T" in stamp and stamp.endswith("+00:00"), stamp
        assert datetime.fromisoformat(stamp).utcoffset() == timedelta(0)


HYPERLINK = '=HYPERLINK("http://x")'


def test_formulas_come_out_inert_in_every_csv_of_a_release(
    finished, django_capture_on_commit_callbacks
):
    """A comment, an item field and an external id that a spreadsheet would run as a formula get
    a leading quote in items.csv and annotations.csv (the JSONL files keep them as they are);
    negative numbers stay numbers."""
    project, stage, people, admin = finished
    item = Item.objects.filter(project=project, status="accepted").order_by("pk").first()
    item.payload = {**item.payload, "comment": HYPERLINK, "score": -0.25}
    item.external_id = "-cmd"
    item.save(update_fields=["payload", "external_id"])
    annotation = Annotation.objects.filter(item_stage__item=item).order_by("pk").first()
    annotation.payload = {**annotation.payload, "comment": HYPERLINK}
    annotation.save(update_fields=["payload"])
    release = publish(project, admin, django_capture_on_commit_callbacks)
    assert release.status == "published", release.message
    archive = open_zip(release)
    items = list(csv.DictReader(io.StringIO(member(archive, "items.csv").decode("utf-8"))))
    row = next(row for row in items if row["external_id"] == "'-cmd")
    assert row["payload.comment"] == "'" + HYPERLINK and row["payload.score"] == "-0.25"
    annotations = list(
        csv.DictReader(io.StringIO(member(archive, "annotations.csv").decode("utf-8")))
    )
    mine = [row for row in annotations if row["external_id"] == "'-cmd"]
    assert mine and all(json.loads(row["payload"]).get("comment") is not None for row in mine[:1])
    assert json.loads(mine[0]["payload"])["comment"] == HYPERLINK  # inside a "{" cell: inert
    for name in ("items.csv", "annotations.csv"):
        for line in csv.reader(io.StringIO(member(archive, name).decode("utf-8"))):
            for cell in line:
                assert not cell or cell[0] not in "=+-@\t\r" or float(cell) < 0, (name, cell)
    jsonl = [json.loads(line) for line in member(archive, "items.jsonl").decode().splitlines()]
    assert HYPERLINK in {row["payload"].get("comment") for row in jsonl}

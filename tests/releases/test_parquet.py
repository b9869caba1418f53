"""Parquet copies of a release's plain files (releases/parquet.py): every demo workflow's
release holds items.parquet and annotations.parquet whose rows, read back with pyarrow, are the
JSONL rows exactly; written in row groups as the rows stream; checksummed in the manifest."""

from __future__ import annotations

import hashlib
import json
import zipfile

import pyarrow.parquet as pq
import pytest

from annotation.fixtures.demo_users import DEMO_ROLES
from annotation.management.commands.seed_demo import demo_projects_seed
from annotation.models import Item, Project
from releases.models import Release
from releases.parquet import (
    ParquetSink,
    integer_column,
    json_column,
    number_column,
    read_parquet_rows,
    text_column,
)
from releases.services import release_publish, release_publish_refusal
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def test_every_demo_release_has_parquet_files_equal_to_its_jsonl(
    django_capture_on_commit_callbacks, tmp_path
):
    users = {name: make_user(f"parquet-{name}") for name in DEMO_ROLES}
    with django_capture_on_commit_callbacks(execute=True):
        demo_projects_seed(users)
    projects = list(Project.objects.order_by("slug"))
    assert len(projects) >= 7  # every demo workflow
    compared = {"items": 0, "annotations": 0}
    for project in projects:
        # Items still in the pipeline are released as accepted, so that every kind of payload
        # and answer a demo holds is in the files compared.
        Item.objects.filter(project=project, status=Item.Status.ACTIVE).update(
            status=Item.Status.ACCEPTED
        )
        assert release_publish_refusal(project) is None
        with django_capture_on_commit_callbacks(execute=True):
            release = release_publish(project=project, user=None)
        release = Release.objects.get(pk=release.pk)
        assert release.status == "published", (project.slug, release.message)
        manifest = {entry["name"]: entry for entry in release.manifest["files"]}
        with zipfile.ZipFile(release.archive.path) as archive:
            members = {name.split("/", 1)[1]: name for name in archive.namelist()}
            for stem in ("items", "annotations"):
                parquet = archive.read(members[f"{stem}.parquet"])
                path = tmp_path / f"{project.slug}-{stem}.parquet"
                path.write_bytes(parquet)
                lines = archive.read(members[f"{stem}.jsonl"]).decode("utf-8").split("\n")[:-1]
                jsonl = [json.loads(line) for line in lines]
                rows = read_parquet_rows(path)
                assert rows == jsonl, (project.slug, stem)
                assert [list(row) for row in rows[:1]] == [list(row) for row in jsonl[:1]]
                entry = manifest[f"{stem}.parquet"]
                assert entry["sha256"] == hashlib.sha256(parquet).hexdigest()
                assert entry["bytes"] == len(parquet) and entry["rows"] == len(jsonl)
                compared[stem] += len(rows)
            sums = archive.read(members["SHA256SUMS"]).decode()
            assert f"{manifest['items.parquet']['sha256']}  items.parquet" in sums
            assert archive.getinfo(members["items.parquet"]).compress_type == zipfile.ZIP_STORED
    assert compared["items"] > 50 and compared["annotations"] > 50, compared


def test_rows_are_written_in_row_groups_as_they_stream(tmp_path):
    """A row group is written whenever ``row_group`` rows are waiting: memory holds one row
    group, whatever the row count; JSON columns are marked and hold compact JSON text."""
    columns = [text_column("id"), integer_column("n"), number_column("x"), json_column("v")]
    sink = ParquetSink(tmp_path / "rows.parquet", columns, row_group=100)
    rows = [
        {"id": f"r{n}", "n": n, "x": n / 4, "v": [n, {"k": "ü"}] if n % 3 else None}
        for n in range(1050)
    ]
    for row in rows:
        sink.write(row)
    entry = sink.close()
    assert entry.rows == 1050
    metadata = pq.ParquetFile(tmp_path / "rows.parquet").metadata
    assert metadata.num_row_groups == 11 and metadata.row_group(0).num_rows == 100
    assert read_parquet_rows(tmp_path / "rows.parquet") == rows
    schema = pq.read_schema(tmp_path / "rows.parquet")
    assert schema.field("v").metadata == {b"encoding": b"json"}
    assert pq.read_table(tmp_path / "rows.parquet").column("v")[1].as_py() == '[1,{"k":"ü"}]'


def test_csv_blocks_keep_empty_strings_and_nulls_apart(tmp_path):
    """Rows PostgreSQL spelled as CSV: an empty unquoted cell is null, ``""`` an empty string,
    quoted cells may hold commas, quotes and line breaks."""
    columns = [text_column("id"), json_column("value"), number_column("s"), integer_column("n")]
    sink = ParquetSink(tmp_path / "csv.parquet", columns, row_group=2)
    sink.write_csv_block(b'a,"""x""",1.5,2\n"",,,\n')
    sink.write_csv_block(b'"line\nbreak, ""q""",null,-0.25,\n')
    sink.close()
    assert read_parquet_rows(tmp_path / "csv.parquet") == [
        {"id": "a", "value": "x", "s": 1.5, "n": 2},
        {"id": "", "value": None, "s": None, "n": None},
        {"id": 'line\nbreak, "q"', "value": None, "s": -0.25, "n": None},
    ]

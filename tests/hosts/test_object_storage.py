"""Files on an S3-compatible object store (rungwise/storage.py), against moto's server: an
upload import and a release build and download round trip, ranged reads, nothing under
MEDIA_ROOT; and a release built by a worker process with a MEDIA_ROOT of its own downloaded
by this one, as a worker host and a web host would."""

from __future__ import annotations

import hashlib
import io
import os
import zipfile

import pytest
from django.core.files.base import ContentFile
from django.test import Client

from annotation import services
from annotation.models import Item, ItemStage, Role
from imports.models import ImportBatch
from imports.services import import_batch_create, import_batch_run
from releases.models import Release
from releases.services import release_publish
from rungwise import storage as object_storage
from rungwise.storage import ObjectStorage
from tests.conftest import wait_for
from tests.factories import make_items, make_member, make_project, make_verify_stage
from tests.hosts.conftest import settings_for, start_queue_worker, stop_worker

pytestmark = pytest.mark.django_db


def record_gets(storage) -> list[str]:
    """The Range header of every GetObject the storage's client sends from now on."""
    ranges: list[str] = []
    storage.connection.meta.client.meta.events.register(
        "before-call.s3.GetObject", lambda params, **_: ranges.append(params["headers"]["Range"])
    )
    return ranges


def range_length(header: str) -> int:
    first, last = header.removeprefix("bytes=").split("-")
    return int(last) - int(first) + 1


def test_the_settings_keep_files_on_disk_unless_a_bucket_is_named():
    local = settings_for(RUNGWISE_S3_BUCKET="")["STORAGES"]["default"]
    assert local["BACKEND"] == "django.core.files.storage.FileSystemStorage"
    remote = settings_for(
        RUNGWISE_S3_BUCKET="lab-files",
        RUNGWISE_S3_ENDPOINT_URL="http://minio:9000",
        RUNGWISE_S3_PREFIX="/site-a/",
    )["STORAGES"]["default"]
    assert remote["BACKEND"] == "rungwise.storage.ObjectStorage"
    options = remote["OPTIONS"]
    assert (options["bucket_name"], options["endpoint_url"]) == ("lab-files", "http://minio:9000")
    assert options["location"] == "site-a" and options["addressing_style"] == "path"
    # Same-named uploads must not replace each other, as on the file system.
    assert options["file_overwrite"] is False and options["default_acl"] is None


def test_an_upload_import_runs_from_the_object_store(object_store):
    project = make_project()
    make_verify_stage(project)
    data = "".join(f"e{n},Sentence number {n}\r\n" for n in range(2000)).encode()
    data = b"external_id,text\r\n" + data
    batch = import_batch_create(
        project=project,
        user=make_member(project, Role.ADMIN),
        fileobj=io.BytesIO(data),
        filename="pairs.csv",
    )
    batch = import_batch_run(batch_id=batch.pk)
    assert batch.status == ImportBatch.Status.SUCCEEDED, batch.message
    assert Item.objects.filter(project=project).count() == 2000
    assert batch.sha256 == hashlib.sha256(data).hexdigest() and batch.file_size == len(data)
    assert isinstance(batch.file.storage._wrapped, ObjectStorage)
    # The object itself, fetched with the store's own API.
    client = object_store.connection.meta.client
    stored = client.get_object(Bucket=object_store.bucket_name, Key=batch.file.name)
    assert stored["Body"].read() == data
    # A second file of the same name is a second object.
    again = import_batch_create(
        project=project, user=None, fileobj=io.BytesIO(data), filename="pairs.csv"
    )
    assert again.file.name != batch.file.name


def test_a_release_is_built_to_and_downloaded_from_the_object_store(
    object_store, django_capture_on_commit_callbacks
):
    project = make_project(slug="stored")
    stage = make_verify_stage(project, overlap=1)
    make_items(project, 5)
    person = make_member(project, Role.ANNOTATOR)
    while (assignment := services.assignment_next(annotator=person, stage=stage)) is not None:
        with django_capture_on_commit_callbacks(execute=True):
            services.annotation_submit(
                assignment_id=assignment.pk, annotator=person, payload={"value": "keep"}
            )
    admin = make_member(project, Role.ADMIN)
    with django_capture_on_commit_callbacks(execute=True):
        release = release_publish(project=project, user=admin)
    release.refresh_from_db()
    assert release.status == Release.Status.PUBLISHED, release.message
    client = Client()
    client.force_login(admin)
    response = client.get(f"/projects/stored/releases/v{release.version}/download/")
    assert response.status_code == 200
    assert response.streaming
    body = b"".join(response.streaming_content)
    assert int(response["Content-Length"]) == len(body)
    assert hashlib.sha256(body).hexdigest() == release.sha256 == response["X-Checksum-SHA256"]
    names = zipfile.ZipFile(io.BytesIO(body)).namelist()
    assert "stored-v1/items.jsonl" in names and "stored-v1/manifest.json" in names


def test_a_read_fetches_the_ranges_it_needs_not_the_object(object_store):
    size = 24 * 1024 * 1024 + 123  # above the multipart threshold: saved in four parts
    data = os.urandom(1024 * 1024) * 24 + b"x" * 123
    assert len(data) == size
    name = object_store.save("checks/big.bin", ContentFile(data))
    ranges = record_gets(object_store)

    with object_store.open(name, "rb") as handle:
        handle.seek(20 * 1024 * 1024 + 5)
        assert handle.read(1000) == data[20 * 1024 * 1024 + 5 : 20 * 1024 * 1024 + 1005]
        assert handle.size == size
    # One GET of one first-size range, however large the object.
    assert ranges == [f"bytes={20 * 1024 * 1024 + 5}-{20 * 1024 * 1024 + 5 + 256 * 1024 - 1}"]

    ranges.clear()
    digest = hashlib.sha256()
    with object_store.open(name, "rb") as handle:
        while chunk := handle.read(64 * 1024):
            digest.update(chunk)
    assert digest.hexdigest() == hashlib.sha256(data).hexdigest()
    # Sequential reads grow the ranges (fewer requests) and never ask past the end.
    lengths = [range_length(header) for header in ranges]
    assert lengths[0] == object_storage.FIRST_RANGE and lengths == sorted(lengths)
    assert sum(lengths) == size and len(ranges) < 10


def test_reading_a_large_object_holds_a_buffer_not_the_object(object_store):
    """django-storages' own reader downloads the whole object into memory first; this one
    holds its 1 MiB buffer and the chunk being read."""
    import tracemalloc

    data = os.urandom(1024 * 1024) * 32
    name = object_store.save("checks/large.bin", ContentFile(data))
    del data
    tracemalloc.start()
    try:
        with object_store.open(name, "rb") as handle:
            while handle.read(64 * 1024):
                pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, peak


def test_a_zip_member_is_read_without_fetching_the_archive(object_store):
    members = {f"data/part-{n}.bin": os.urandom(2 * 1024 * 1024) for n in range(6)}
    members["data/README.md"] = b"# A small member\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for member_name, content in members.items():
            archive.writestr(member_name, content)
    name = object_store.save("checks/archive.zip", ContentFile(buffer.getvalue()))
    ranges = record_gets(object_store)
    with object_store.open(name, "rb") as raw, zipfile.ZipFile(raw) as archive:
        assert archive.read("data/README.md") == members["data/README.md"]
    assert sum(range_length(header) for header in ranges) < len(buffer.getvalue()) / 4


def test_a_missing_object_is_a_missing_file(object_store):
    with pytest.raises(FileNotFoundError):
        object_store.open("nowhere/nothing.zip", "rb")
    with pytest.raises(ValueError, match="read-only"):
        object_store.open("checks/new.bin", "wb")


@pytest.mark.postgres
@pytest.mark.celery_worker
@pytest.mark.timeout(900)  # process start-ups on a loaded machine (READY_SECONDS)
def test_a_release_built_by_a_worker_host_downloads_from_a_web_host(
    object_store, object_store_env, transactional_db, postgres, tmp_path
):
    """The worker process has a MEDIA_ROOT of its own (another host's disk): the release it
    builds is downloaded here only because both keep files on the object store."""
    if not os.environ.get("CELERY_BROKER_URL"):
        pytest.skip("needs Redis: run through `make test` (scripts/with-services.sh)")
    from rungwise.celery import app

    app.conf.task_always_eager = False
    app.control.purge()
    worker = start_queue_worker(
        "interactive,bulk", **object_store_env, MEDIA_ROOT=str(tmp_path / "worker-media")
    )
    try:
        project = make_project(slug="hosts")
        stage = make_verify_stage(project, overlap=1)
        make_items(project, 3)
        person = make_member(project, Role.ANNOTATOR)
        while (assignment := services.assignment_next(annotator=person, stage=stage)) is not None:
            services.annotation_submit(
                assignment_id=assignment.pk, annotator=person, payload={"value": "keep"}
            )
        wait_for(  # resolved by the worker
            lambda: (
                not ItemStage.objects.filter(stage=stage)
                .exclude(state=ItemStage.State.RESOLVED)
                .exists()
            ),
            timeout=300,
        )
        admin = make_member(project, Role.ADMIN)
        release = release_publish(project=project, user=admin)

        def published():
            release.refresh_from_db()
            return release.status != Release.Status.BUILDING

        wait_for(published, timeout=300)
        assert release.status == Release.Status.PUBLISHED, release.message
        client = Client()
        client.force_login(admin)
        response = client.get(f"/projects/hosts/releases/v{release.version}/download/")
        body = b"".join(response.streaming_content)
        assert hashlib.sha256(body).hexdigest() == release.sha256
        assert not (tmp_path / "worker-media").exists() or not any(
            (tmp_path / "worker-media").rglob("*")
        )
    finally:
        stop_worker(worker)

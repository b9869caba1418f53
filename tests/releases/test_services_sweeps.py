"""Stuck release builds and imports — a build or import whose message was
lost (broker down, or restarted empty) or whose worker died is sent again by the beat sweep,
and marked failed with a reason after three started attempts; admins can retry or mark failed.
The same with the real broker and worker: tests/annotation/test_workers.py."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.contrib.admin.sites import site
from django.test import RequestFactory
from django.utils import timezone

from annotation.models import Item, ItemStage, Role
from imports import services as import_services
from imports.models import ImportBatch
from imports.tasks import run_import, sweep_stuck_imports
from releases import services as release_services
from releases.models import Release
from releases.services import build as release_building
from releases.services import jobs as release_jobs
from releases.tasks import build_release, sweep_stuck_releases
from tests.factories import make_items, make_member, make_project, make_verify_stage

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def broker_down(monkeypatch):
    """Sending a task fails as it does with Redis down (enqueue_on_commit logs and goes on)."""

    def refuse(*args, **kwargs):
        raise ConnectionRefusedError("Error 111 connecting to 127.0.0.1:6379")

    for task in (build_release, run_import):
        monkeypatch.setattr(task, "delay", refuse)
    yield
    monkeypatch.undo()


def finished_project():
    project = make_project()
    make_verify_stage(project, overlap=1)
    make_items(project, 3)
    Item.objects.filter(project=project).update(status=Item.Status.ACCEPTED)
    ItemStage.objects.filter(item__project=project).update(state=ItemStage.State.RESOLVED)
    return project


def age(model, pk, **fields_seconds_ago):
    now = timezone.now()
    model.objects.filter(pk=pk).update(
        **{field: now - timedelta(seconds=seconds) for field, seconds in fields_seconds_ago.items()}
    )


def test_a_build_whose_message_was_lost_is_sent_again_by_the_sweep(
    broker_down, django_capture_on_commit_callbacks, request
):
    project = finished_project()
    with django_capture_on_commit_callbacks(execute=True):
        release = release_services.release_publish(project=project, user=None)
    release.refresh_from_db()
    assert (release.status, release.attempts, release.started_at) == ("building", 0, None)
    assert sweep_stuck_releases() == 0  # within the grace period: perhaps still queued

    request.getfixturevalue("monkeypatch").undo()  # the broker is back
    age(Release, release.pk, created_at=3600)
    with django_capture_on_commit_callbacks(execute=True):
        assert sweep_stuck_releases() == 1
    release.refresh_from_db()
    assert (release.status, release.attempts) == (Release.Status.PUBLISHED, 1)
    assert release.stats["items"] == 3


def test_a_build_whose_worker_died_is_retried_then_failed_with_a_reason(
    django_capture_on_commit_callbacks, monkeypatch
):
    project = finished_project()
    release = Release.objects.create(project=project, version=1, status=Release.Status.BUILDING)
    # A live build (started a moment ago) is left alone, and a second message for it too.
    Release.objects.filter(pk=release.pk).update(started_at=timezone.now(), attempts=1)
    assert sweep_stuck_releases() == 0
    assert release_services.release_build(release_id=release.pk).status == "building"

    # Its worker died: started long ago, never finished. Each build dies the same way here.
    def dies(release, workdir):
        raise SystemExit("killed")

    monkeypatch.setattr(release_building, "_build", dies)
    for attempt in (2, 3):
        age(Release, release.pk, started_at=24 * 3600)
        with pytest.raises(SystemExit), django_capture_on_commit_callbacks(execute=True):
            sweep_stuck_releases()
        release.refresh_from_db()
        assert (release.status, release.attempts) == (Release.Status.BUILDING, attempt)
    age(Release, release.pk, started_at=24 * 3600)
    sweep_stuck_releases()
    release.refresh_from_db()
    assert release.status == Release.Status.FAILED
    assert "started 3 times and never finished" in release.message

    # The version is reused by the next publish, which builds.
    monkeypatch.undo()
    with django_capture_on_commit_callbacks(execute=True):
        again = release_services.release_publish(project=project, user=None)
    again.refresh_from_db()
    assert (again.pk, again.version, again.status) == (release.pk, 1, Release.Status.PUBLISHED)


def test_an_import_whose_message_was_lost_is_run_by_the_sweep_and_capped(
    broker_down, django_capture_on_commit_callbacks, request
):
    project = make_project()
    make_verify_stage(project, overlap=1)
    with django_capture_on_commit_callbacks(execute=True):
        batch = import_services.import_batch_create(
            project=project, user=None, fileobj=io.BytesIO(b'{"id": "a", "text": "x"}\n'),
            filename="late.jsonl", options={},
        )  # fmt: skip
        import_services.import_batch_start(batch=batch, run_inline=False)
    batch.refresh_from_db()
    assert batch.status == ImportBatch.Status.PENDING
    request.getfixturevalue("monkeypatch").undo()
    age(ImportBatch, batch.pk, created_at=3600)
    with django_capture_on_commit_callbacks(execute=True):
        assert sweep_stuck_imports() == 1
    batch.refresh_from_db()
    assert (batch.status, batch.attempts, batch.items_created) == ("succeeded", 1, 1)

    # A batch whose runs keep dying is failed after three, with a reason.
    stuck = ImportBatch.objects.create(
        project=project, filename="dies.jsonl", format="jsonl",
        status=ImportBatch.Status.WRITING, attempts=3,
    )  # fmt: skip
    age(ImportBatch, stuck.pk, started_at=24 * 3600)
    assert sweep_stuck_imports() == 1
    stuck.refresh_from_db()
    assert stuck.status == ImportBatch.Status.FAILED
    assert "started 3 times and never finished" in stuck.message


def test_admins_retry_or_mark_failed(django_capture_on_commit_callbacks):
    from django.contrib.auth import get_user_model
    from django.contrib.messages.storage.fallback import FallbackStorage

    project = finished_project()
    admin_user = get_user_model().objects.create_superuser("root", "r@example.org", "pw-123456")
    make_member(project, Role.ADMIN)
    failed = Release.objects.create(
        project=project, version=1, status=Release.Status.FAILED, message="no worker"
    )
    request = RequestFactory().post("/admin/")
    request.user = admin_user
    request.session = {}
    request._messages = FallbackStorage(request)
    model_admin = site._registry[Release]
    with django_capture_on_commit_callbacks(execute=True):
        model_admin.retry_build(request, Release.objects.filter(pk=failed.pk))
    failed.refresh_from_db()
    assert failed.status == Release.Status.PUBLISHED

    building = Release.objects.create(project=project, version=2, status=Release.Status.BUILDING)
    model_admin.mark_failed(request, Release.objects.filter(pk=building.pk))
    building.refresh_from_db()
    assert building.status == Release.Status.FAILED and "root" in building.message

    batch = ImportBatch.objects.create(
        project=project, filename="x.jsonl", format="jsonl", status=ImportBatch.Status.PENDING
    )
    site._registry[ImportBatch].mark_failed(request, ImportBatch.objects.filter(pk=batch.pk))
    batch.refresh_from_db()
    assert batch.status == ImportBatch.Status.FAILED


def test_a_build_queued_while_the_broker_was_down_shows_queued_and_is_retried_from_the_page(
    broker_down, django_capture_on_commit_callbacks, monkeypatch
):
    """Published while Redis was down (the soak publishes during its outage): the release is
    not "building" but queued, waiting for a worker, and its admin can send it again from the
    releases page without waiting for the sweep or opening the Django admin."""
    from django.test import Client

    project = finished_project()
    admin = make_member(project, Role.ADMIN)
    with django_capture_on_commit_callbacks(execute=True):
        release = release_services.release_publish(project=project, user=admin)
    browser = Client()
    browser.force_login(admin)
    retry_url = f"/projects/{project.slug}/releases/v{release.version}/retry/"
    for url in (f"/projects/{project.slug}/releases/", retry_url.replace("retry/", "")):
        page = browser.get(url).content.decode()
        assert "Queued" in page and "Building…" not in page
        assert f'action="{retry_url}"' in page
    monkeypatch.undo()  # the broker is back
    with django_capture_on_commit_callbacks(execute=True):
        answer = browser.post(retry_url)
    assert answer.status_code == 302
    release.refresh_from_db()
    assert release.status == Release.Status.PUBLISHED
    # Not for people who do not administer the project, and not for a published release.
    researcher = Client()
    researcher.force_login(make_member(project, Role.RESEARCHER))
    assert researcher.post(retry_url).status_code in (403, 404)
    assert browser.post(retry_url).status_code == 409


def test_a_slow_superseded_build_does_not_publish_over_the_newer_one(
    django_capture_on_commit_callbacks, tmp_path
):
    """A build attempt that an admin gave up on (marked failed, then published again) may still
    be running; when it finishes, the attempt started since owns the version: the old one's
    files (an older snapshot, the old notes) must not be published under it."""
    project = finished_project()
    with django_capture_on_commit_callbacks(execute=False):
        release = release_services.release_publish(project=project, user=None, notes="first")
    slow = release_jobs.release_claim(release.pk)
    release_services.release_mark_failed(release_id=release.pk, reason="taking too long")
    with django_capture_on_commit_callbacks(execute=False):
        again = release_services.release_publish(project=project, user=None, notes="second")
    assert again.pk == release.pk  # the failed version is reused
    newer = release_jobs.release_claim(release.pk)
    (tmp_path / "slow").mkdir()
    (tmp_path / "newer").mkdir()

    finished = release_building._build(slow, tmp_path / "slow")
    assert finished.status == Release.Status.BUILDING  # superseded: nothing published
    published = release_building._build(newer, tmp_path / "newer")
    assert published.status == Release.Status.PUBLISHED
    assert published.notes == "second"
    assert published.attempts == newer.attempts

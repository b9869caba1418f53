"""Pushing a release's dataset folder to the Hugging Face Hub (releases/hf_push.py, the
``release_push_hub`` command and the release page's button), against a local server that
speaks the endpoints ``huggingface_hub`` calls (tests/releases/hub_server.py): the files stored
on the server are byte-equal to the release's, the repository id and revision are recorded, and
a refused token, another account's repository and an unreachable Hub are said in words. The
server answers the preupload as the Hub does (``lfs`` for the parquet shards), so the shards go
through the basic Git LFS transfer (batch, PUT, verify, ``lfsFile`` commit lines) — the path the
client takes with ``HF_HUB_DISABLE_XET`` set; ``hf_xet``'s own path is tested for what it does
against a Hub that offers no Xet."""

from __future__ import annotations

import hashlib
import io
import socket
import zipfile

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from huggingface_hub import constants as hub_constants
from huggingface_hub.utils._runtime import is_xet_available

from annotation.fixtures.demo_users import DEMO_ROLES
from annotation.models import Item, Project, Role
from annotation.plugins import registered_plugins
from releases.hf_dataset import FOLDER
from releases.hf_push import release_push_hub, release_push_request
from releases.models import Release
from releases.services import release_publish
from tests.factories import PASSWORD, make_member, make_user
from tests.releases.hub_server import HubServer, Repo

pytestmark = pytest.mark.django_db
TOKEN = "hf_alice_write"


@pytest.fixture
def hub(settings, tmp_path, monkeypatch):
    # The local Hub offers the basic Git LFS transfer only, the default HF_TRANSFER; the push
    # sets the client's Xet switch from it (monkeypatched so the test leaves it as it was).
    monkeypatch.setattr(hub_constants, "HF_HUB_DISABLE_XET", hub_constants.HF_HUB_DISABLE_XET)
    settings.HF_TRANSFER = "lfs"
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    server = HubServer.start(tokens={TOKEN: ("alice", ["causal-lab"]), "hf_bob": ("bob", [])})
    settings.HF_ENDPOINT = server.url
    settings.HF_TOKEN = TOKEN
    yield server
    server.stop()


@pytest.fixture
def meter_release(django_capture_on_commit_callbacks) -> Release:
    """The METER demo project's release (every item released, as the demo's files allow)."""
    users = {name: make_user(f"push-{name}") for name in DEMO_ROLES}
    plugin = next(plugin for plugin in registered_plugins() if plugin.name == "review.meter")
    with django_capture_on_commit_callbacks(execute=True):
        plugin.demo(users=users)
    project = Project.objects.get(kind="meter")
    Item.objects.filter(project=project, status=Item.Status.ACTIVE).update(
        status=Item.Status.ACCEPTED
    )
    with django_capture_on_commit_callbacks(execute=True):
        release = release_publish(project=project, user=None)
    release.refresh_from_db()
    assert release.status == Release.Status.PUBLISHED, release.message
    return release


def _dataset_files(release: Release) -> dict[str, bytes]:
    with zipfile.ZipFile(release.archive.path) as archive:
        return {
            name.split("/", 2)[2]: archive.read(name)
            for name in archive.namelist()
            if name.split("/", 2)[1] == FOLDER
        }


def test_the_command_pushes_a_demo_release_byte_for_byte_and_records_the_revision(
    hub, meter_release
):
    out = io.StringIO()
    call_command(
        "release_push_hub",
        f"{meter_release.project.slug}/v{meter_release.version}",
        "--repo",
        "causal-lab/meter",
        stdout=out,
    )
    release = Release.objects.get(pk=meter_release.pk)
    repo = hub.repos["causal-lab/meter"]
    assert repo.private and repo.owner == "alice"
    expected = _dataset_files(release)
    assert any(name.startswith("data/questions/level_1-") for name in expected)
    assert repo.files == expected  # byte-equal, README card included
    assert release.hub_status == Release.HubStatus.PUSHED
    assert release.hub_repo_id == "causal-lab/meter"
    assert release.hub_revision == repo.commits[-1]
    assert release.hub_revision in out.getvalue()
    # The parquet shards went through Git LFS (batch, PUT, verify), the card as a regular file.
    shards = {name for name in expected if name.endswith(".parquet")}
    assert shards and repo.lfs == shards and "README.md" not in repo.lfs
    assert sorted(hub.lfs_uploads) == sorted(
        {hashlib.sha256(expected[n]).hexdigest() for n in shards}
    )
    assert ("POST", "/datasets/causal-lab/meter.git/info/lfs/objects/batch") in hub.requests
    assert sum(1 for method, _ in hub.requests if method == "PUT") == len(hub.lfs_uploads)
    # A second push of the same release reuses the repository and changes nothing: the Hub
    # already holds every object, so the batch answers without actions and nothing is PUT.
    uploaded = list(hub.lfs_uploads)
    hub.requests.clear()
    call_command("release_push_hub", str(release.pk), "--repo", "causal-lab/meter", stdout=out)
    assert hub.repos["causal-lab/meter"].files == expected
    assert hub.lfs_uploads == uploaded
    assert ("POST", "/datasets/causal-lab/meter.git/info/lfs/objects/batch") in hub.requests
    assert not [path for method, path in hub.requests if method == "PUT"]
    assert Release.objects.get(pk=release.pk).hub_status == Release.HubStatus.PUSHED


def test_a_new_push_removes_data_files_the_release_no_longer_has(hub, meter_release):
    stale = {"data/questions/level_1-00000-of-00009.parquet": b"old"}
    hub.repos["causal-lab/meter"] = repo = Repo("alice", True, files=stale)
    call_command("release_push_hub", str(meter_release.pk), "--repo", "causal-lab/meter")
    assert "data/questions/level_1-00000-of-00009.parquet" not in repo.files
    assert set(repo.files) == set(_dataset_files(meter_release))


def test_failures_are_said_in_words(hub, meter_release, settings):
    settings.HF_TOKEN = "hf_wrong"
    with pytest.raises(CommandError, match="refused the token"):
        call_command("release_push_hub", str(meter_release.pk), "--repo", "alice/meter")
    release = Release.objects.get(pk=meter_release.pk)
    assert release.hub_status == Release.HubStatus.FAILED
    assert "refused the token" in release.hub_message and not release.hub_revision

    # bob owns bob/meter; alice's token may not write to it.
    settings.HF_TOKEN = "hf_bob"
    call_command("release_push_hub", str(meter_release.pk), "--repo", "bob/meter")
    settings.HF_TOKEN = TOKEN
    with pytest.raises(CommandError, match="may not create or write bob/meter"):
        call_command("release_push_hub", str(meter_release.pk), "--repo", "bob/meter")
    hub.read_only.add(TOKEN)  # a read token: the Hub answers 403 to its writes
    with pytest.raises(CommandError, match="or the token is read-only"):
        call_command("release_push_hub", str(meter_release.pk), "--repo", "causal-lab/meter")
    assert "causal-lab/meter" not in hub.repos

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        settings.HF_ENDPOINT = f"http://127.0.0.1:{free.getsockname()[1]}"
    with pytest.raises(CommandError, match="Could not reach the Hub"):
        call_command("release_push_hub", str(meter_release.pk), "--repo", "alice/meter")

    with pytest.raises(CommandError, match="owner/name"):
        call_command("release_push_hub", str(meter_release.pk), "--repo", "no slash")
    settings.HF_TOKEN = ""
    with pytest.raises(CommandError, match="set HF_TOKEN"):
        call_command("release_push_hub", str(meter_release.pk), "--repo", "alice/meter")


def test_the_release_page_pushes_through_a_task_for_admins_only(
    hub, meter_release, django_capture_on_commit_callbacks
):
    project = meter_release.project
    admin = make_member(project, Role.ADMIN, "hub-admin")
    researcher = make_member(project, Role.RESEARCHER, "hub-researcher")
    url = reverse("releases:push-hub", args=[project.slug, meter_release.version])
    page = reverse("releases:release", args=[project.slug, meter_release.version])

    client = Client()
    client.login(username=researcher.username, password=PASSWORD)
    assert "Push to the Hugging Face Hub" not in client.get(page).content.decode()
    assert client.post(url, {"repo_id": "alice/meter"}).status_code == 403

    client.login(username=admin.username, password=PASSWORD)
    assert "Push to the Hugging Face Hub" in client.get(page).content.decode()
    response = client.post(url, {"repo_id": "not a repo"})
    assert response.status_code == 400
    assert "owner/name" in response.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"repo_id": "alice/meter"})
    assert response.status_code == 302
    release = Release.objects.get(pk=meter_release.pk)
    assert release.hub_status == Release.HubStatus.PUSHED, release.hub_message
    shown = client.get(page).content.decode()
    assert release.hub_revision in shown and "alice/meter" in shown


def test_the_task_leaves_a_release_not_marked_pushing_alone(hub, meter_release):
    assert release_push_hub(release_id=meter_release.pk).hub_status == ""
    assert hub.requests == []
    with pytest.raises(Exception, match="owner/name"):
        release_push_request(release=meter_release, repo_id="x")


def test_a_refused_lfs_upload_is_a_failed_push_said_on_the_command_and_the_page(hub, meter_release):
    hub.refuse_uploads = 403  # the storage refuses the pre-signed PUT
    with pytest.raises(CommandError, match=r"file storage refused data/.+\.parquet \(403"):
        call_command("release_push_hub", str(meter_release.pk), "--repo", "causal-lab/meter")
    release = Release.objects.get(pk=meter_release.pk)
    assert release.hub_status == Release.HubStatus.FAILED and not release.hub_revision
    assert "nothing was committed to causal-lab/meter" in release.hub_message
    repo = hub.repos["causal-lab/meter"]
    assert repo.files == {} and repo.commits == [] and hub.lfs_objects == {}

    admin = make_member(release.project, Role.ADMIN, "hub-lfs-admin")
    client = Client()
    client.login(username=admin.username, password=PASSWORD)
    page = client.get(reverse("releases:release", args=[release.project.slug, release.version]))
    shown = page.content.decode()
    assert "The push to causal-lab/meter failed." in shown
    assert "file storage refused data/" in shown

    # A storage error (500): the client retries the PUT with back-off, then the push fails.
    hub.refuse_uploads = 500
    with pytest.raises(CommandError, match=r"file storage refused data/.+\.parquet \(500"):
        call_command("release_push_hub", str(release.pk), "--repo", "causal-lab/meter")
    assert Release.objects.get(pk=release.pk).hub_status == Release.HubStatus.FAILED
    assert repo.commits == []

    hub.refuse_uploads = None  # pushed again once the storage takes the files
    call_command("release_push_hub", str(release.pk), "--repo", "causal-lab/meter")
    assert repo.files == _dataset_files(release)
    assert Release.objects.get(pk=release.pk).hub_status == Release.HubStatus.PUSHED


def test_with_hf_xet_the_client_asks_for_xet_and_a_hub_without_it_fails_in_words(
    hub, meter_release, settings
):
    settings.HF_TRANSFER = "xet"
    if not is_xet_available():  # without hf_xet the client takes Git LFS on its own
        call_command("release_push_hub", str(meter_release.pk), "--repo", "causal-lab/meter")
        assert hub.repos["causal-lab/meter"].lfs
        return
    with pytest.raises(CommandError, match="HF_TRANSFER=lfs"):
        call_command("release_push_hub", str(meter_release.pk), "--repo", "causal-lab/meter")
    release = Release.objects.get(pk=meter_release.pk)
    assert release.hub_status == Release.HubStatus.FAILED
    assert "did not give a Xet storage token" in release.hub_message
    # It asked for a Xet token and never for the Git LFS batch, though the Hub offers only that.
    assert any(path.endswith("/xet-write-token/main") for _, path in hub.requests)
    assert not any(path.endswith("/info/lfs/objects/batch") for _, path in hub.requests)
    assert hub.repos["causal-lab/meter"].files == {}

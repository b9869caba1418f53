"""Pushing a published release's dataset folder (``hf_dataset/``, releases/hf_dataset.py) to a
dataset repository of the Hugging Face Hub, with ``huggingface_hub``.

``release_push_request`` (the release page; admins) checks the request, marks the release
``pushing`` and sends ``releases.tasks.push_release_to_hub`` after commit (the bulk queue);
``release_push_hub`` does the push (the task, and ``manage.py release_push_hub`` directly): it
reads the folder out of the release's archive, asks the Hub who the token belongs to, creates
the repository (private; an existing one of the token's account is reused), and commits the
folder's files in one commit, deleting the ``data/`` files an earlier push left that this
release does not have (a split that shrank to fewer shards would otherwise be read twice). The
repository id and the commit's revision are recorded on the release; a failure is recorded in
words (``hub_message``) that say what to do: a refused token, a repository of another account,
an unreachable Hub.

Large files: the Hub answers the preupload with ``lfs`` for the ``.parquet`` shards (binary, its
default ``.gitattributes``) and ``regular`` for ``README.md``. The transfer is chosen by
``settings.HF_TRANSFER``: ``lfs`` (the default) turns the client's Xet path off for the push, so
the shards go by the Git LFS transfer below, the path tests/releases/hub_server.py exercises.
With ``xet`` (and ``hf_xet`` installed, a dependency of ``huggingface_hub`` on the usual
platforms) the client sends them through Xet storage, always: ``upload_folder`` then takes its pipelined path (``huggingface_hub
._upload_pipeline``: commits of 250 files at first, so a dataset folder is one commit) and never
asks the Git LFS batch API; a Hub that gives no Xet token fails the push, said in words naming
``HF_TRANSFER=lfs``. With ``lfs`` (or without ``hf_xet``) the client takes the
basic Git LFS transfer: the batch API, one PUT per object the Hub lacks, verify, then one commit
naming the objects (``lfsFile``); objects the Hub already holds are not sent again, and a
refused upload fails the push before any commit.

Token and address: ``settings.HF_TOKEN`` and ``settings.HF_ENDPOINT`` (from the environment,
rungwise/settings.py); tests point the address at tests/releases/hub_server.py.
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
import zipfile
from pathlib import Path

import httpx2
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from huggingface_hub import HfApi
from huggingface_hub import constants as hub_constants
from huggingface_hub.errors import HfHubHTTPError

from annotation.errors import ApplicationError, Conflict
from releases.hf_dataset import FOLDER
from releases.models import Release

logger = logging.getLogger(__name__)
#: ``owner/name`` as the Hub accepts it.
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")
CHUNK = 1 << 20
#: How huggingface_hub wraps the storage's answer to a Git LFS upload (``_upload_lfs_files``).
LFS_UPLOAD_FAILED = re.compile(r"^Error while uploading '(?P<path>.+)' to the Hub")


def _dataset_files(release: Release) -> list[str]:
    return sorted(
        entry["name"]
        for entry in (release.manifest or {}).get("files", [])
        if entry["name"].startswith(f"{FOLDER}/")
    )


def release_push_check(*, release: Release, repo_id: str) -> str:
    """The repository id to push ``release`` to, cleaned; ApplicationError (in words, naming the
    field) when the release cannot be pushed there."""
    repo_id = (repo_id or "").strip().strip("/")
    if release.status != Release.Status.PUBLISHED or not release.archive:
        raise Conflict(f"v{release.version} is not published; only published releases are pushed.")
    if not _dataset_files(release):
        raise Conflict(
            f"v{release.version} was built before releases held a dataset folder; publish a new "
            "version to push it."
        )
    if not REPO_ID.match(repo_id):
        raise ApplicationError(
            "Name the Hub repository as owner/name (letters, digits, '-', '_' and '.'), "
            "e.g. my-lab/causal-benchmark.",
            {"repo_id": repo_id[:200]},
        )
    if not settings.HF_TOKEN:
        raise ApplicationError(
            "No Hugging Face token is configured: set HF_TOKEN in the server's environment "
            "(a write token of the account or organisation that owns the repository).",
            {"repo_id": repo_id},
        )
    return repo_id


@transaction.atomic
def release_push_start(*, release: Release, repo_id: str) -> Release:
    """Mark ``release`` as being pushed to ``repo_id`` (checked: ``release_push_check``)."""
    repo_id = release_push_check(release=release, repo_id=repo_id)
    locked = Release.objects.select_for_update().get(pk=release.pk)
    locked.hub_repo_id = repo_id
    locked.hub_status = Release.HubStatus.PUSHING
    locked.hub_message = ""
    locked.save(update_fields=["hub_repo_id", "hub_status", "hub_message"])
    return locked


def release_push_request(*, release: Release, repo_id: str) -> Release:
    """The release page's push: mark it pushing and send the push to a worker after commit."""
    from releases.tasks import push_release_to_hub

    with transaction.atomic():
        started = release_push_start(release=release, repo_id=repo_id)
        transaction.on_commit(lambda: push_release_to_hub.delay(started.pk))
    return started


def _extract(release: Release, target: Path) -> None:
    """The release's ``hf_dataset/`` files, read out of its archive into ``target`` (streamed)."""
    wanted = set(_dataset_files(release))
    with release.archive.open("rb") as raw, zipfile.ZipFile(raw) as archive:
        for member in archive.namelist():
            name = member.split("/", 1)[-1]
            if name not in wanted:
                continue
            path = target / name[len(FOLDER) + 1 :]
            path.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as source, open(path, "wb") as out:
                shutil.copyfileobj(source, out, CHUNK)


def hub_error_in_words(error: Exception, repo_id: str, endpoint: str) -> str:
    """What went wrong in a push, for the admin (the page and the command)."""
    cause = error.__cause__
    uploading = LFS_UPLOAD_FAILED.match(str(error))
    if uploading and isinstance(cause, HfHubHTTPError) and cause.response is not None:
        server = (cause.server_message or "").strip()
        return (
            f"The Hub's file storage refused {uploading['path']} "
            f"({cause.response.status_code}{': ' + server[:200] if server else ''}); nothing "
            f"was committed to {repo_id}. Push again; if it is refused again, check the "
            "repository's storage quota and the Hub's status."
        )
    if isinstance(error, OSError) and "xet" in str(error).lower():
        return (
            f"The Hub at {endpoint} did not give a Xet storage token ({str(error)[:200]}); "
            "this server is set to send large files through Xet (HF_TRANSFER=xet). Set "
            "HF_TRANSFER=lfs in the server's environment to send them through Git LFS, then "
            "push again."
        )
    if isinstance(error, HfHubHTTPError) and error.response is not None:
        status = error.response.status_code
        if status == 401:
            return (
                "The Hub refused the token (HF_TOKEN): it is wrong, expired or revoked. "
                "Set a valid write token and push again."
            )
        if status in (403, 404):
            return (
                f"The token may not write to {repo_id}: the repository belongs to another "
                "account or organisation, or the token is read-only. Choose a repository of "
                "the token's account (or one of its organisations) or a token with write access."
            )
        server = (error.server_message or "").strip()
        return f"The Hub answered {status} to the push of {repo_id}" + (
            f": {server[:300]}" if server else "."
        )
    if isinstance(error, httpx2.HTTPError):
        return (
            f"Could not reach the Hub at {endpoint} ({type(error).__name__}: {str(error)[:200]}). "
            "Check the network and HF_ENDPOINT, then push again."
        )
    if isinstance(error, ValueError):  # huggingface_hub's own checks, e.g. of the card's YAML
        return f"The push of {repo_id} was refused: {str(error)[:300]}"
    logger.exception("push to %s failed", repo_id)
    return f"The push stopped on an internal error ({type(error).__name__}: {str(error)[:300]})."


def hub_push_folder(folder: Path, *, repo_id: str, message: str) -> str:
    """Commit ``folder`` to the Hub dataset repository ``repo_id`` (created private when it
    does not exist) and return the commit's revision. Raises the client's errors."""
    # huggingface_hub reads this module constant on each upload; only this module pushes, so
    # setting it per push keeps every push of the process on the configured transfer.
    hub_constants.HF_HUB_DISABLE_XET = settings.HF_TRANSFER != "xet"
    api = HfApi(endpoint=settings.HF_ENDPOINT, token=settings.HF_TOKEN)
    account = api.whoami()
    namespaces = {account.get("name")} | {org.get("name") for org in account.get("orgs") or []}
    if repo_id.split("/", 1)[0] not in namespaces:
        raise ApplicationError(
            f"The token belongs to {account.get('name')!r}, which may not create or write "
            f"{repo_id}: push to one of {', '.join(sorted(str(n) for n in namespaces))}, or use "
            "a token of the repository's owner."
        )
    api.create_repo(repo_id, repo_type="dataset", private=True, exist_ok=True)
    info = api.upload_folder(
        folder_path=folder,
        repo_id=repo_id,
        repo_type="dataset",
        commit_message=message,
        delete_patterns=["data/**"],
    )
    return str(info.oid)


def release_push_hub(*, release_id: int) -> Release:
    """Push a release marked ``pushing`` (``release_push_start``) and record the outcome: the
    revision, or the failure in words. A release not marked pushing is returned untouched, so
    the task is safe to run twice (a second push of the same files commits nothing new)."""
    release = Release.objects.select_related("project").get(pk=release_id)
    if release.hub_status != Release.HubStatus.PUSHING:
        return release
    workdir = Path(tempfile.mkdtemp(prefix=f"release-{release.pk}-hub-"))
    repo_id = release.hub_repo_id
    try:
        _extract(release, workdir)
        revision = hub_push_folder(
            workdir,
            repo_id=repo_id,
            message=f"{release.project.name} v{release.version} (Rungwise release)",
        )
    except ApplicationError as error:
        return _record(release, failed=error.message)
    except Exception as error:
        return _record(release, failed=hub_error_in_words(error, repo_id, settings.HF_ENDPOINT))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return _record(release, revision=revision)


def _record(release: Release, *, revision: str = "", failed: str = "") -> Release:
    Release.objects.filter(pk=release.pk, hub_status=Release.HubStatus.PUSHING).update(
        hub_status=Release.HubStatus.FAILED if failed else Release.HubStatus.PUSHED,
        hub_message=failed[:2000],
        **({"hub_revision": revision, "hub_pushed_at": timezone.now()} if not failed else {}),
    )
    release.refresh_from_db()
    return release


def hub_dataset_url(release: Release) -> str:
    """The pushed dataset's page on the Hub (at the recorded revision), or ''."""
    if not release.hub_repo_id or not release.hub_revision:
        return ""
    endpoint = settings.HF_ENDPOINT.rstrip("/")
    return f"{endpoint}/datasets/{release.hub_repo_id}/tree/{release.hub_revision}"

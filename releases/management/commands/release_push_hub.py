"""``manage.py release_push_hub <release> --repo owner/name``: push a published release's dataset
folder to the Hugging Face Hub now, in this process (releases/hf_push.py), with the token and
address of the environment (HF_TOKEN, HF_ENDPOINT). ``<release>`` is ``<project slug>/v<n>``
(``demo-ratings/v1``) or the release's id. Prints the revision, or why the push failed."""

from __future__ import annotations

import re

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import ApplicationError
from releases.hf_push import release_push_hub, release_push_start
from releases.models import Release

RELEASE = re.compile(r"^(?P<slug>[-\w]+)/v?(?P<version>\d+)$")


def release_named(text: str) -> Release:
    """The release ``<slug>/v<n>`` or ``<id>``; CommandError naming what exists otherwise."""
    match = RELEASE.match(text.strip())
    if match:
        found = Release.objects.filter(
            project__slug=match["slug"], version=int(match["version"])
        ).first()
    elif text.strip().isdigit():
        found = Release.objects.filter(pk=int(text)).first()
    else:
        raise CommandError(f"Name the release as <project slug>/v<n> or by its id, not {text!r}.")
    if found is None:
        raise CommandError(f"There is no release {text!r}.")
    return found


class Command(BaseCommand):
    help = "Push a published release's Hugging Face dataset folder to a Hub dataset repository."

    def add_arguments(self, parser):
        parser.add_argument("release", help="<project slug>/v<n>, or the release's id")
        parser.add_argument("--repo", required=True, help="the Hub dataset repository, owner/name")

    def handle(self, *args, **options):
        release = release_named(options["release"])
        try:
            release_push_start(release=release, repo_id=options["repo"])
        except ApplicationError as error:
            raise CommandError(error.message) from None
        release = release_push_hub(release_id=release.pk)
        if release.hub_status != Release.HubStatus.PUSHED:
            raise CommandError(release.hub_message or "The push did not finish.")
        self.stdout.write(
            f"Pushed {release} to {release.hub_repo_id} at revision {release.hub_revision}."
        )

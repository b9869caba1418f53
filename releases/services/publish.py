"""Publishing a release: the next version reserved under a lock on the project row (backed by
the unique (project, version) constraint), the build enqueued after commit, and what a publish
would release, for the confirmation page."""

from __future__ import annotations

from typing import Any, cast

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Max, Q, Sum
from django.utils import timezone

from annotation import services
from annotation.errors import ApplicationError, Conflict
from annotation.models import Annotation, Item, ItemStage, Project, Resolution
from releases.layouts import STANDARD_FILES, layout_for_kind
from releases.models import Release
from releases.services.rows import RELEASED_STATUSES


@transaction.atomic
def release_publish(
    *,
    project: Project,
    user: AbstractBaseUser | None,
    notes: str = "",
    version: int | None = None,
) -> Release:
    """Reserve the next version of ``project`` and build it in the background.

    ``version`` (optional) must be the next number: asking for a version already published is a
    409 (releases are immutable), as is publishing while another version is still building. A
    failed build's version is reused by the next publish.
    """
    locked = Project.objects.select_for_update().get(pk=project.pk)
    notes = (notes or "").strip()
    if len(notes) > 5000:
        raise ApplicationError(
            "The notes are too long (5,000 characters at most).", {"notes": 5000}
        )
    releases = Release.objects.filter(project=locked)
    refusal = release_publish_refusal(locked)
    if refusal is not None:
        raise refusal
    last = releases.order_by("-version").first()
    retry = last if last is not None and last.status == Release.Status.FAILED else None
    next_version = release_next_version(locked)
    if version is not None and version != next_version:
        if releases.filter(version=version, status=Release.Status.PUBLISHED).exists():
            raise Conflict(
                f"v{version} of {locked.name} is already published, and a published release "
                f"never changes. Publish v{next_version} instead.",
                {"version": version, "next_version": next_version},
            )
        raise ApplicationError(
            f"The next version of {locked.name} is v{next_version}, not v{version}.",
            {"version": version, "next_version": next_version},
        )
    if retry is not None:
        release = retry
        release.status = Release.Status.BUILDING
        # The user as given (the typed field wants the concrete user model).
        release.notes, release.created_by, release.message = notes, cast(Any, user), ""
        release.created_at, release.started_at, release.attempts = timezone.now(), None, 0
        release.save(
            update_fields=[
                "status",
                "notes",
                "created_by",
                "message",
                "created_at",
                "started_at",
                "attempts",
            ]  # fmt: skip
        )
    else:
        release = Release.objects.create(
            project=locked,
            version=next_version,
            status=Release.Status.BUILDING,
            notes=notes,
            created_by=cast(Any, user) if user is not None and user.is_authenticated else None,
        )
    from releases.tasks import build_release

    services.enqueue_on_commit(build_release, release.pk)
    return release


def release_next_version(project: Project) -> int:
    """The number the next publish takes: one after the last version, or the last one again
    when its build failed (a failed version's number is reused)."""
    last = Release.objects.filter(project=project).order_by("-version").first()
    if last is None:
        return 1
    return last.version if last.status == Release.Status.FAILED else last.version + 1


def release_publish_refusal(project: Project) -> ApplicationError | None:
    """Why ``project`` cannot publish now (another version still building, no finished items),
    or None: the one check behind ``release_publish`` and its confirmation page."""
    building = Release.objects.filter(project=project, status=Release.Status.BUILDING).first()
    if building is not None:
        return Conflict(
            f"v{building.version} of {project.name} is still being built; wait until it is "
            f"published or has failed.",
            {"version": building.version},
        )
    if not Item.objects.filter(project=project, status__in=RELEASED_STATUSES).exists():
        return ApplicationError(
            f"{project.name} has no finished items yet (accepted or kept-rejected); a release "
            f"would be empty.",
            {"items": 0},
        )
    return None


#: How many unresolved items the confirmation page names (the count is always complete).
UNRESOLVED_LISTED = 20


def release_content_fingerprint(project: Project) -> dict[str, Any]:
    """What the data of a release of ``project`` would be made of, in a few aggregates: the
    released items (how many, the newest id, the sum of their versions, how many rejected and
    kept), their current annotations (how many, the newest id: a changed answer is a new row)
    and their decisions (how many, the latest change). Equal fingerprints mean the same items,
    answers and decisions: the build stores it in ``Release.stats["content"]`` and the
    confirmation page warns when publishing now would repeat the last published version."""
    released = Q(item_stage__item__status__in=RELEASED_STATUSES)
    items = Item.objects.filter(project=project, status__in=RELEASED_STATUSES).aggregate(
        n=Count("pk"),
        last=Max("pk"),
        versions=Sum("version"),
        rejected=Count("pk", filter=Q(status=Item.Status.REJECTED)),
    )
    answers = Annotation.objects.filter(released, item_stage__stage__project=project).aggregate(
        n=Count("pk"), last=Max("pk")
    )
    decisions = Resolution.objects.filter(released, item_stage__stage__project=project).aggregate(
        n=Count("pk"), last=Max("computed_at")
    )
    return {
        "items": [items["n"], items["last"], items["versions"] or 0, items["rejected"]],
        "annotations": [answers["n"], answers["last"]],
        "decisions": [
            decisions["n"],
            decisions["last"].isoformat() if decisions["last"] is not None else None,
        ],
    }


def release_unresolved(project: Project, *, limit: int = UNRESOLVED_LISTED) -> dict[str, Any]:
    """The items a release of ``project`` would leave out because they are still in the
    pipeline: how many, and the first ``limit`` (oldest first) with the stages that hold them
    and in what state ("Needs adjudication", "Open", …)."""
    active = Item.objects.filter(project=project, status=Item.Status.ACTIVE)
    listed = list(active.order_by("pk").values("pk", "external_id")[:limit])
    where: dict[int, list[str]] = {}
    for item_id, stage_name, state in (
        ItemStage.objects.filter(item_id__in=[row["pk"] for row in listed])
        .exclude(state__in=[ItemStage.State.RESOLVED, ItemStage.State.DISCARDED])
        .order_by("stage__position")
        .values_list("item_id", "stage__name", "state")
    ):
        where.setdefault(item_id, []).append(
            f"{stage_name}: {ItemStage.State(state).label.lower()}"
        )
    return {
        "count": active.count(),
        "items": [
            {
                "id": row["pk"],
                "external_id": row["external_id"],
                "where": where.get(row["pk"], ["between stages"]),
            }
            for row in listed
        ],
    }


def release_publish_preview(project: Project) -> dict[str, Any]:
    """What publishing now would release, for the confirmation page: the version, the items
    by status, the annotations of those items (as ``release_annotation_rows`` selects them),
    the files (the standard ones, and the benchmark layout's as the last published version
    had them), the version its diff is taken against, ``identical_to`` (that version when
    its data are the same as now: ``release_content_fingerprint``; None otherwise, or when it
    was built before fingerprints were kept), ``unresolved`` (``release_unresolved``: what
    stays out) and ``refusal`` (an ApplicationError) when it cannot be published now. Counts are as of this moment; the build reads them again
    in one snapshot."""
    released = Item.objects.filter(project=project, status__in=RELEASED_STATUSES)
    by_status = dict(released.values_list("status").annotate(count=Count("pk")))
    annotations = Annotation.objects.filter(
        item_stage__stage__project=project, item_stage__item__status__in=RELEASED_STATUSES
    ).count()
    previous = (
        Release.objects.filter(project=project, status=Release.Status.PUBLISHED)
        .order_by("-version")
        .first()
    )
    layout_files = []
    if layout_for_kind(project.kind) is not None and previous is not None:
        layout_files = sorted(
            entry["name"]
            for entry in (previous.manifest or {}).get("files", [])
            if entry["name"] not in STANDARD_FILES
        )
    return {
        "version": release_next_version(project),
        "items": sum(by_status.values()),
        "items_by_status": {
            "accepted": by_status.get(Item.Status.ACCEPTED, 0),
            "rejected and kept": by_status.get(Item.Status.REJECTED, 0),
        },
        "annotations": annotations,
        "files": list(STANDARD_FILES),
        "has_layout": layout_for_kind(project.kind) is not None,
        "layout_files": layout_files,
        "previous": previous,
        "identical_to": previous
        if previous is not None
        and (previous.stats or {}).get("content") == release_content_fingerprint(project)
        else None,
        "unresolved": release_unresolved(project),
        "refusal": release_publish_refusal(project),
    }

"""The data manager's writes: tags added to or removed from items in bulk, and the columns a
member chose. Each service owns its transaction (CONTRIBUTING.md)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.contrib.auth.models import User
from django.db import transaction

from annotation.errors import ApplicationError
from annotation.models import Item, Project
from studio.models import ItemColumns, ItemTag, Tag

TAG_NAME_MAX = 60


def _tag_name(name: str) -> str:
    name = " ".join((name or "").split())
    if not name:
        raise ApplicationError("Name the tag.", {"field": "tag_name"})
    if len(name) > TAG_NAME_MAX:
        raise ApplicationError(
            f"A tag name has at most {TAG_NAME_MAX} characters.", {"field": "tag_name"}
        )
    return name


@transaction.atomic
def items_tag(*, project: Project, item_ids: Iterable[int], name: str, add: bool) -> int:
    """Add the tag ``name`` to (``add``) or remove it from the items ``item_ids`` of
    ``project`` (ids of other projects' items are ignored); the tag is created on first use.
    Returns how many items gained or lost it. Safe to run twice (a unique pair per item)."""
    name = _tag_name(name)
    ids = list(
        Item.objects.filter(project=project, pk__in=list(item_ids)).values_list("pk", flat=True)
    )
    if add:
        tag, _ = Tag.objects.get_or_create(project=project, name=name)
        had = set(
            ItemTag.objects.filter(tag=tag, item_id__in=ids).values_list("item_id", flat=True)
        )
        ItemTag.objects.bulk_create(
            [ItemTag(tag=tag, item_id=pk) for pk in ids if pk not in had],
            ignore_conflicts=True,
        )
        return len(set(ids) - had)
    existing = Tag.objects.filter(project=project, name=name).first()
    if existing is None:
        return 0
    removed, _ = ItemTag.objects.filter(tag=existing, item_id__in=ids).delete()
    return removed


@transaction.atomic
def item_columns_save(
    *, project: Project, user: User, columns: Sequence[str], offered: Iterable[str]
) -> list[str]:
    """Remember the columns ``user`` chose for ``project`` (the ``offered`` keys among
    ``columns``, in their order, each once). Returns the keys saved."""
    allowed = set(offered)
    keys = list(dict.fromkeys(key for key in columns if key in allowed))
    ItemColumns.objects.update_or_create(project=project, user=user, defaults={"columns": keys})
    return keys

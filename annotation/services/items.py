"""Item writes a plug-in asks of the engine outside a stage's routes: discard items, link items
to their authors, mark items accepted whose work is final. Plug-ins call them through ``annotation.api``; none updates ``Item`` rows
itself. Each service owns its transaction and touches only items of the project it is given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.db import transaction

from annotation.models import Item, ItemStage, Membership, Project, Stage


@transaction.atomic
def items_discard(*, project: Project, item_ids: Iterable[int]) -> int:
    """Mark items of ``project`` discarded (``Item.Status.DISCARDED``), e.g. the near-duplicates
    a plug-in drops when a cluster is decided (it keeps its own record of why). Ids of other
    projects are ignored. Returns how many items changed.

    Contract: the items' item stages are left as they are, so call it for items with no open
    work (a route's ``discard`` closes the item stage it decides; an item stage still open
    would be handed out as before). Runs inside the caller's transaction when there is one
    (e.g. an ``on_item_stage_decided`` listener: all or nothing with the decision)."""
    return (
        Item.objects.filter(project=project, pk__in=list(item_ids))
        .exclude(status=Item.Status.DISCARDED)
        .update(status=Item.Status.DISCARDED)
    )


@transaction.atomic
def items_author_link(*, project: Project, authors: Mapping[int, int]) -> int:
    """Set ``Item.author`` from ``authors`` (item id -> user id) where the item belongs to
    ``project``, has no author yet and the user is a member of the project (an author's rules
    — ``not_author``, ``author_if_known`` — then apply to them). Other pairs are skipped: an
    author once set is never replaced here. Returns how many items were linked."""
    members = set(
        Membership.objects.filter(project=project, user_id__in=set(authors.values())).values_list(
            "user_id", flat=True
        )
    )
    linked = 0
    for item_id, user_id in authors.items():
        if user_id not in members:
            continue
        linked += Item.objects.filter(project=project, pk=item_id, author__isnull=True).update(
            author_id=user_id
        )
    return linked


@transaction.atomic
def items_accept(
    *, project: Project, item_ids: Iterable[int], unless_in_stage: Stage | None = None
) -> int:
    """Mark active items of ``project`` accepted (``Item.Status.ACCEPTED``): their work is
    final, e.g. items whose only answers were imported as historic ones. Items of other
    projects and items not active (discarded, already accepted) are left as they are; with
    ``unless_in_stage`` so are the items that have an item stage there (work may still come
    there: ratings keeps items open for live rating active). Returns how many items changed.

    Contract: only the item's status changes, never its item stages (call it for items with
    no open work elsewhere). Runs inside the caller's transaction when there is one."""
    items = Item.objects.filter(project=project, pk__in=list(item_ids), status=Item.Status.ACTIVE)
    if unless_in_stage is not None:
        items = items.exclude(
            pk__in=ItemStage.objects.filter(stage=unless_in_stage).values("item_id")
        )
    return items.update(status=Item.Status.ACCEPTED)

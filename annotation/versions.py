"""When an annotator may still change an answer: the one rule that the change service
(annotation.services.annotation_revise), the change page and the "My recent answers" list all
read.

An answer can be changed while its item stage is still collecting answers (open) or waiting for
its resolution (resolving), in the round and phase it was given in, in an active stage of an
active project. Once the policy has decided (resolved, discarded, or sent to a reviewer) or the
item moved on to its next phase or round, the answers stand: a decision was made with them.

The same states say when votes are *final* (shown to others: annotation.selectors.
annotations_visible). That rule is written twice, for one row in Python (votes_final) and for
the database as a condition (final_votes, item_stages_with_final_votes); both are here, and
tests/annotation/test_versions.py checks that they agree in every state."""

from __future__ import annotations

from django.db.models import F, Q, QuerySet

from annotation.models import Annotation, ItemStage, Stage

#: Item stage states in which answers may still change.
CHANGEABLE_STATES = frozenset({ItemStage.State.OPEN, ItemStage.State.RESOLVING})

_BY_STATE = {
    ItemStage.State.RESOLVED: "This item has been decided, so your answer can no longer be changed.",
    ItemStage.State.DISCARDED: "This item was discarded, so your answer can no longer be changed.",
    ItemStage.State.ADJUDICATION: (
        "This item went to a reviewer for a decision, so your answer can no longer be changed."
    ),
}


def change_refusal(annotation: Annotation, item_stage: ItemStage, stage: Stage) -> str | None:
    """Why `annotation` can no longer be changed (a sentence for the annotator), or None when it
    can. `item_stage` must be the annotation's, read under its row lock when about to write."""
    if annotation.assignment_id is None:
        return "Imported answers cannot be changed."
    if not annotation.is_current:
        return "A newer version of this answer exists; change that one."
    if not (stage.is_active and stage.project.is_active):
        return "This stage is closed, so your answer can no longer be changed."
    if item_stage.state not in CHANGEABLE_STATES:
        return _BY_STATE.get(
            ItemStage.State(item_stage.state), "Your answer can no longer be changed."
        )
    if (item_stage.round, item_stage.phase) != (annotation.round, annotation.phase):
        return (
            "This item has moved on to its next step since you answered, so your answer can no "
            "longer be changed."
        )
    return None


def final_votes() -> Q:
    """The condition (on Annotation) of a final vote, the complement of an open one. A vote is
    open while it was given in its item stage's current round and that round still collects or
    may change answers (state open or resolving: CHANGEABLE_STATES). Votes of an item stage that
    is decided, discarded or waiting for a reviewer are final, and so are those of an earlier
    round (decided before a route sent the item back)."""
    return ~Q(item_stage__state__in=CHANGEABLE_STATES) | Q(round__lt=F("item_stage__round"))


def item_stages_with_final_votes(item_stages: QuerySet[ItemStage]) -> QuerySet[ItemStage]:
    """`item_stages` whose current votes are final (annotations_visible shows them to every role
    its page admits): decided, discarded or waiting for a reviewer, never one still collecting
    or changing answers."""
    return item_stages.exclude(state__in=CHANGEABLE_STATES)


def votes_final(item_stage: ItemStage) -> bool:
    """Whether `item_stage`'s current votes are final (item_stages_with_final_votes, for one row
    already read); its resolution (value, tally) is shown only then."""
    return item_stage.state not in CHANGEABLE_STATES

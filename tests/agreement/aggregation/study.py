"""A small label stage with planted spammers, built through the engine's services, for the tests
of the model policies, the fitting service and the page section (tests/agreement/aggregation/).

Five people label items whose true label is ``LABELS[index % 3]``: three careful ones (always
right) and two spammers who always answer "causal". On items two spammers share, the plurality
says "causal" whatever the truth; Dawid–Skene learns that the spammers' votes carry nothing.

Who shares which item is fixed, not left to the stage's order: that order comes from each item
stage's random key (drawn by the database when the item is opened), so which truths the spammers
happened to share — and with it how far a model can tell them from the careful ones — changed
from run to run, on SQLite and PostgreSQL alike. ``annotate`` adds the items one at a time (so
their item stages' ids follow the items' order; one insert of many numbers them in no set order)
and leases in the sweep order (``assignment_next(after=0)``: the open items by id, every rule of
the stage still held), the five taking turns. With overlap 3 the pattern repeats every five
items: spammers 0 and 1 share items 0 and 3 (mod 5), with careful 0 and careful 2 in turn, so
every truth has items the spammers outvote — the same on every database and every run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.models import Role
from tests.factories import make_label_stage, make_member, make_project

LABELS = ("causal", "temporal", "none")
CAREFUL, SPAMMERS = 3, 2


@dataclass
class Study:
    project: Any
    stage: Any
    careful: list
    spammers: list
    researcher: Any


def truth(item) -> str:
    return LABELS[int(item.external_id.split("-")[1]) % 3]


def choose(study: Study):
    def answer(person, item) -> str:
        return "causal" if person in study.spammers else truth(item)

    return answer


def build(*, slug: str, policy: str = "dawid_skene", **stage_options: Any) -> Study:
    project = make_project(slug=slug)
    stage = make_label_stage(
        project, overlap=3, choices=LABELS, resolution_policy=policy, **stage_options
    )
    careful = [make_member(project, username=f"{slug}-careful-{n}") for n in range(CAREFUL)]
    spammers = [make_member(project, username=f"{slug}-spammer-{n}") for n in range(SPAMMERS)]
    researcher = make_member(project, Role.RESEARCHER, username=f"{slug}-researcher")
    return Study(project, stage, careful, spammers, researcher)


def annotate(study: Study, capture_on_commit, *, items: int, prefix: str = "item") -> int:
    """Add ``items`` items and have everyone annotate them (resolved on commit): the spammers
    then the careful ones take turns, one lease each, in the sweep order (see the module's
    docstring), until nobody gets an item. Returns the number of annotations."""
    for index in range(items):
        services.items_create(project=study.project, rows=[_row(prefix, index)])
    answer = choose(study)
    count = 0
    active = [*study.spammers, *study.careful]
    with capture_on_commit(execute=True):
        while active:
            for person in list(active):
                reached = access_stage_for_annotator(user=person, stage_id=study.stage.pk)
                assignment = services.assignment_next(annotator=person, stage=reached, after=0)
                if assignment is None:
                    active.remove(person)
                    continue
                services.annotation_submit(
                    assignment_id=assignment.pk,
                    annotator=person,
                    payload={"value": answer(person, assignment.item_stage.item)},
                )
                count += 1
    return count


def _row(prefix: str, index: int) -> dict[str, Any]:
    return {"external_id": f"{prefix}-{index:05d}", "payload": {"text": f"Sentence {index}."}}

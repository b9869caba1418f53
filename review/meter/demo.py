"""The METER demo project (``make run``): hand-written pairs and entries in every stage, with
the demo annotators' work simulated through the services (leases, submits, resolution):

* verify: 7 pairs decided (one discarded by a single reject), 3 waiting for annotators;
* check, edit and vote: one entry decided by vote (edit A won), one where the original won,
  one three-way split waiting for the reviewer, one waiting for its editors, one for a checker;
* filter: one entry kept by all three, one waiting; one verified pair still awaiting generation;
* human baseline: the kept entry, for annotators to answer without seeing the answers.

``drive`` is the simulation loop; tests use it too.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from annotation import api as engine
from annotation.access import access_stage_for_annotator
from annotation.api import item_stage_resolve, phase_of
from annotation.fixtures.demo_users import demo_members_add
from annotation.models import ItemStage, Project, Stage
from review.meter import services
from review.meter.entries import clean_questions
from review.meter.fixtures import ENTRIES, PAIRS, entry_line
from review.meter.kinds import stage_candidates

Answer = Callable[[int, Any, str], dict[str, Any]]


def drive(stage: Stage, people: Sequence[Any], answer: Answer, *, resolve: bool = True) -> int:
    """The people take turns leasing items of ``stage`` and submitting ``answer(person index,
    item, phase name)`` until nobody gets an item; with ``resolve`` each complete item stage is
    resolved at once (phases advance, routes are followed) instead of after commit. Returns the
    number of annotations."""
    count, active = 0, list(range(len(people)))
    while active:
        for index in list(active):
            person = people[index]
            access = access_stage_for_annotator(user=person, stage_id=stage.pk)
            assignment = engine.assignment_next(annotator=person, stage=access)
            if assignment is None:
                active.remove(index)
                continue
            item_stage = assignment.item_stage
            phase = phase_of(stage, item_stage).name
            engine.annotation_submit(
                assignment_id=assignment.pk,
                annotator=person,
                payload=answer(index, item_stage.item, phase),
            )
            count += 1
            if resolve:
                state = ItemStage.objects.filter(pk=item_stage.pk).values_list("state", flat=True)
                if state.first() == ItemStage.State.RESOLVING:
                    item_stage_resolve(item_stage_id=item_stage.pk)
                    active = list(range(len(people)))
    return count


def edited(pair_id: str, changes: dict[tuple[int, str], str]) -> list[dict[str, Any]]:
    """The pair's entry in canonical form with ``changes`` {(level, field): text} applied;
    fields are "question", "correct" or "d1".."d4" (distractor texts)."""
    questions = copy.deepcopy(clean_questions(ENTRIES[pair_id]))
    for (level, field), text in changes.items():
        question = questions[level - 1]
        if field.startswith("d"):
            question["distractors"][int(field[1:]) - 1]["text"] = text
        else:
            question[field] = text
    return questions


#: What the demo's two editors write (the first and the second edit set, by annotator number) and
#: which version each of the three annotators votes for.
EDITS = {
    "esl-0001": (
        {(2, "d1"): "The river would still have flooded the streets."},
        {
            (2, "d1"): "The river would still have flooded the streets.",
            (1, "question"): "What led to the school being closed on Monday?",
        },
        ("first", "first", "second"),
    ),
    "maven-0003": (
        {},
        {(1, "d4"): "San Francisco lies on a peninsula."},
        ("original", "original", "second"),
    ),
    "wikiwhy-0008": (
        {(2, "correct"): "Traffic in the centre would most likely have fallen further."},
        {(2, "question"): "Suppose the city had doubled the charge: what would have happened?"},
        ("original", "first", "second"),
    ),
}


def _answer(index: int, item: Any, phase: str) -> dict[str, Any]:
    pair_id = item.payload.get("pair_id", item.external_id)
    if phase == "annotate" and "questions" not in item.payload:  # verify
        if pair_id == "meci-0006" and index == 2:
            return {
                "value": "reject",
                "reason": "erroneous",
                "comment": "Cause and effect are swapped.",
            }
        return {"value": "keep"}
    if phase == "check":
        flags = ["L2.distractor1:ambiguous"] if pair_id == "esl-0001" else []
        return {"flags": flags, "comments": {"L2": "Distractor 1 is long-winded."} if flags else {}}
    if phase == "edit":
        first, second, _ = EDITS.get(pair_id, ({}, {}, ()))
        item_stage = item.item_stages.get(stage__kind="meter_edit")
        done = item_stage.annotations.filter(phase=1, round=item_stage.round).count()
        return {"questions": edited(pair_id, second if done else first)}
    if phase == "vote":
        first, second, votes = EDITS[pair_id]
        wanted = {"original": {}, "first": first, "second": second}[votes[index]]
        questions = edited(pair_id, wanted)
        item_stage = item.item_stages.get(stage__kind="meter_edit")
        label = next(
            c["label"] for c in stage_candidates(item_stage, item) if c["questions"] == questions
        )
        return {"vote": label}
    return {"value": "keep", "failed": []}  # filter


def seed(*, users: dict, slug: str) -> Project:
    """Create the demo project once (memberships are re-added every run)."""
    project = Project.objects.filter(slug=slug).first()
    created = project is None
    if created:
        project = services.meter_project_create(
            slug=slug,
            name="Cause–effect questions (METER demo)",
            description="METER-style: verify cause–effect pairs, check, edit and vote on "
            "generated questions, filter them on five criteria.",
            seed=20251125,
        )
    demo_members_add(project, users)
    if not created:
        return project
    people = [users[name] for name in ("annotator1", "annotator2", "annotator3")]
    stages = {stage.slug: stage for stage in project.stages.all()}
    waiting = {"maven-0004", "esl-0009", "esl-0002"}

    def pair_rows(pairs):
        return [
            {
                "external_id": p["pair_id"],
                "payload": dict(p),
                "group": p["pair_id"],
                "source": p["source"],
            }
            for p in pairs
        ]

    engine.items_create(
        project=project, rows=pair_rows(p for p in PAIRS if p["pair_id"] not in waiting)
    )
    drive(stages["verify"], people, _answer)
    engine.items_create(
        project=project, rows=pair_rows(p for p in PAIRS if p["pair_id"] in waiting)
    )

    def entries(*pair_ids):
        import json

        text = "\n".join(json.dumps(entry_line(pair_id)) for pair_id in pair_ids)
        report = services.entries_import_text(project=project, text=text)
        assert report.ok, report.errors

    entries("esl-0001")
    drive(stages["edit"], people, _answer)
    drive(stages["filter"], people, _answer)
    entries("maven-0003", "wikiwhy-0008")
    drive(stages["edit"], people, _answer)
    entries("wikiwhy-0007")
    drive(stages["edit"], people, _answer, resolve=False)  # the check; editors come next
    entries("maven-0010")
    services.baseline_open(project=project, sample=10, seed=1)  # the kept entry, to answer
    services.evidence_open(project=project, sample=10, seed=1)  # …and to mark evidence in
    return project

"""The quality demo (its plug-in's ``demo``, quality/apps.py): *Gold checks (demo)*, a labelling
stage with silent gold items (annotation/gold.py: items with a known answer served at most one
in every two, never shown as such) and a rule that acts after 4 gold answers below 60 %. A Prolific study runs on
it with two simulated participants: one answers well and completes, one misses every gold
answer and is screened out automatically (the Crowd tab suggests rejecting them). Among the
demo's annotators, ``annotator1`` answers well and ``annotator3`` misses the gold and is paused
on the stage (their item screen says so); ``annotator2`` has the stage to try. The researcher
sees both actions, with their reasons, on the stage's quality page and can undo them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F

from annotation import api as engine
from annotation.access import access_stage_for_annotator
from annotation.models import Assignment, Project, Role, Stage
from crowd import services as crowd
from crowd.entry import Entry
from quality import services

SLUG = "quality-demo"
TOKEN = "demo-gold"
CHOICES = ["causal", "temporal", "unrelated"]
#: (sentence A, sentence B, the known answer or None): the items with one are silent gold.
PAIRS = [
    ("The glass fell off the table.", "It broke.", "causal"),
    ("He brushed his teeth.", "He went to bed.", None),
    ("The battery died.", "The phone switched off.", "causal"),
    ("She read a novel.", "It rained in Lisbon.", None),
    ("The power went out.", "The fridge warmed up.", "causal"),
    ("They ate lunch.", "They took a walk.", None),
    ("The kettle boiled.", "Steam rose from it.", "causal"),
    ("He bought a ticket.", "The moon was full.", None),
    ("The dam burst.", "The valley flooded.", "causal"),
    ("She opened the window.", "A bird sang outside.", None),
    ("The ice melted.", "The floor got wet.", "causal"),
    ("He finished the report.", "He went home.", None),
    ("The bell rang.", "The pupils left the room.", None),
    ("She watered the plants.", "A car passed by.", None),
    ("He locked the door.", "He walked to the station.", None),
    ("The sun rose.", "The cat slept on the sofa.", None),
    ("They painted the fence.", "They had dinner.", None),
    ("The train was late.", "A dog barked next door.", None),
    ("She wrote a letter.", "She posted it.", None),
    ("He tied his shoes.", "The radio played jazz.", None),
]
#: Items per participant: the ordinary items. Where gold items fall is drawn per person from
#: ids the database gives out (annotation/services/next_item.py, _gold_search: with one in every
#: two, one or two ordinary items before each gold one), so the demo shows the same states
#: whatever the draw: the careful participant completes on ordinary items alone, and the
#: careless one has met their 4th gold item by their 12th item, before this quota.
QUOTA = sum(1 for _a, _b, gold in PAIRS if gold is None)


def _rows() -> list[dict[str, Any]]:
    rows = []
    for number, (a, b, gold) in enumerate(PAIRS, start=1):
        payload: dict[str, Any] = {"sentence_a": a, "sentence_b": b}
        row: dict[str, Any] = {"external_id": f"pair-{number:02d}", "payload": payload}
        if gold is not None:
            payload["gold"] = gold
            row["purpose"] = "gold"
        rows.append(row)
    return rows


@transaction.atomic
def seed(*, users: dict[str, Any]) -> Project | None:
    if Project.objects.filter(slug=SLUG).exists():
        return None
    project = engine.project_create(
        slug=SLUG,
        name="Gold checks (demo)",
        description="Silent gold items, per-annotator accuracy and automatic pauses.",
    )
    stage = engine.stage_create(
        project=project,
        slug="label",
        name="Label the relation",
        kind="label",
        overlap=6,
        config={"choices": CHOICES},
        instructions="Does A cause B, merely precede it, or neither?",
    )
    engine.items_create(project=project, rows=_rows())
    engine.stage_update(stage=stage, gold_every=2)
    roles = {"admin": Role.ADMIN, "researcher": Role.RESEARCHER}
    for name, role in roles.items():
        if name in users:
            engine.membership_add(project=project, user=users[name], role=role)
    for name in ("annotator1", "annotator2", "annotator3"):
        if name in users:
            engine.membership_add(project=project, user=users[name], role=Role.ANNOTATOR)
    services.quality_rule_set(stage=stage, acts=True, min_gold=4, min_accuracy=0.6, withdraw=False)
    study = crowd.study_create(
        project=project,
        stage=stage,
        name="Gold-checked pilot",
        platform="prolific",
        places=4,
        quota=QUOTA,
        time_limit_minutes=60,
        consent_text=(
            "This study is run by the Rungwise demo team. You will read short pairs of "
            "sentences and say how they are related. Your answers are used for research only."
        ),
        instructions="Read both sentences, then choose causal, temporal or unrelated.",
        completion_code="GDEMO123",
        screenout_code="GSCREEN9",
        max_check_failures=0,
    )
    for number, careless in ((11, False), (12, True)):
        participant, _ = crowd.participant_enter(
            study=study, entry=Entry(platform_id=f"{number:024x}", session_id=f"{number:024x}")
        )
        crowd.participant_consent(participant=participant, accepted=True)
        crowd.participant_instructions_read(participant=participant)
        _answer(participant.user, stage, careless=careless)
        crowd.participant_refresh(participant=participant)
    for name, careless in (("annotator1", False), ("annotator3", True)):
        if name in users:
            _answer(users[name], stage, careless=careless)
    return project


def _answer(user: Any, stage: Stage, *, careless: bool) -> None:
    """Answer the stage until nothing more is handed out (or they are paused): the known
    answer on gold items (a careless annotator always picks "temporal" there), "unrelated"
    elsewhere."""
    for _ in range(len(PAIRS)):
        access = access_stage_for_annotator(user=user, stage_id=stage.pk)
        assignment = engine.assignment_next(annotator=user, stage=access)
        if assignment is None:
            return
        gold = assignment.item_stage.gold
        value = ("temporal" if careless else gold) if gold is not None else "unrelated"
        engine.annotation_submit(
            assignment_id=assignment.pk, annotator=user, payload={"value": value}, seconds_spent=6
        )
        # Simulated reading time on the server's clock (time per item is judged by it).
        Assignment.objects.filter(pk=assignment.pk).update(
            created_at=F("finished_at") - timedelta(seconds=4 if careless else 9)
        )

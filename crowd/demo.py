"""The crowd demo (its plug-in's ``demo``, crowd/apps.py): a small labelling project with
practice items and attention checks, a Prolific study on it at /s/demo-pilot/ and three
simulated participants (one completed, one screened out, one still working), so that the Crowd
tab has figures and the study URL can be tried at once."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F

from annotation import api as engine
from annotation.access import access_stage_for_annotator
from annotation.models import Assignment, Project, Role, Stage
from crowd import services
from crowd.entry import Entry
from crowd.models import Study

SLUG = "crowd-demo"
TOKEN = "demo-pilot"
#: Every participant labels every pair and meets the check (quota = pairs + check; overlap
#: covers every place), so the demo's outcomes do not depend on anyone's item order.
PAIRS = [
    ("The river flooded the fields.", "The harvest was lost."),
    ("She missed the bus.", "She was late for work."),
    ("The sun rose.", "The birds sang."),
    ("They planted trees.", "It snowed in December."),
    ("The road was icy.", "The car skidded."),
]
PLACES = 10


def _pair(a: str, b: str, **extra: Any) -> dict[str, Any]:
    return {"sentence_a": a, "sentence_b": b, **extra}


@transaction.atomic
def seed(*, users: dict[str, Any]) -> Study | None:
    if Project.objects.filter(slug=SLUG).exists():
        return None
    project = engine.project_create(
        slug=SLUG,
        name="Crowd pilot (demo)",
        description="Label causal relations with paid participants from Prolific.",
    )
    stage = engine.stage_create(
        project=project,
        slug="label",
        name="Label the relation",
        kind="label",
        overlap=PLACES,
        config={"choices": ["causal", "temporal", "unrelated"]},
        instructions="Does A cause B, merely precede it, or neither?",
    )
    rows = [
        {"external_id": f"pair-{n:02d}", "payload": _pair(a, b)}
        for n, (a, b) in enumerate(PAIRS, start=1)
    ]
    rows += [
        {
            "external_id": "practice-1",
            "payload": _pair("The vase fell.", "It shattered."),
            "purpose": "practice",
        },
        {
            "external_id": "practice-2",
            "payload": _pair("He woke up.", "He had breakfast."),
            "purpose": "practice",
        },
        {
            "external_id": "pair-06",  # a check looks like any other pair
            "payload": _pair(
                "Attention: choose causal.", "This is a check.", gold={"label": "causal"}
            ),
            "purpose": "attention_check",
        },
    ]
    engine.items_create(project=project, rows=rows)
    for name in ("admin", "researcher"):
        if name in users:
            engine.membership_add(
                project=project,
                user=users[name],
                role=Role.ADMIN if name == "admin" else Role.RESEARCHER,
            )
    study = services.study_create(
        project=project,
        stage=stage,
        name="Causal relations pilot",
        platform="prolific",
        platform_study_id="5" * 24,  # the STUDY_ID of the demo link in README.md
        places=PLACES,
        quota=len(PAIRS) + 1,
        time_limit_minutes=30,
        consent_text=(
            "This study is run by the Rungwise demo team. You will read short pairs of "
            "sentences and say how they are related. Your answers are stored without your "
            "Prolific ID and used for research only. You may stop at any time by returning "
            "the study."
        ),
        instructions="Read both sentences, then choose causal, temporal or unrelated.",
        completion_code="CDEMO123",
        screenout_code="SDEMO456",
        max_check_failures=0,
    )
    Study.objects.filter(pk=study.pk).update(token=TOKEN)
    study.token = TOKEN
    _simulate(study, stage)
    _silent_gold(stage)
    return study


#: Silent gold of the demo (annotation/gold.py): pairs with a known answer that participants
#: entering from now on meet among the others, at most one in every GOLD_EVERY items.
GOLD_PAIRS = [
    ("The glass slipped from his hand.", "It broke on the floor.", "causal"),
    ("She opened the door.", "Later she made tea.", "temporal"),
]
GOLD_EVERY = 3


def _silent_gold(stage: Stage) -> None:
    """Added after the simulated participants, so their figures on the Crowd tab stay as they
    are; the stage's gold page (Setup → gold items of this stage) lists them."""
    engine.items_create(
        project=stage.project,
        rows=[
            {"external_id": f"pair-{number:02d}", "payload": _pair(a, b, gold=known),
             "purpose": "gold"}
            for number, (a, b, known) in enumerate(GOLD_PAIRS, start=len(PAIRS) + 2)
        ],
    )  # fmt: skip
    engine.stage_update(stage=stage, gold_every=GOLD_EVERY)


def _simulate(study: Study, stage: Stage) -> None:
    """Three participants: one finishes, one fails the check, one stops after practice."""
    for number, wrong, items in ((1, False, 99), (2, True, 99), (3, False, 2)):
        participant, _ = services.participant_enter(
            study=study, entry=Entry(platform_id=f"{number:024x}", session_id=f"{number:024x}")
        )
        services.participant_consent(participant=participant, accepted=True)
        services.participant_instructions_read(participant=participant)
        for _ in range(items):
            participant = services.participant_refresh(participant=participant)
            if participant.status != "active":
                break
            access = access_stage_for_annotator(user=participant.user, stage_id=stage.pk)
            assignment = engine.assignment_next(annotator=participant.user, stage=access)
            if assignment is None:
                break
            item = assignment.item_stage.item
            value = "temporal" if wrong and item.purpose == "attention_check" else "causal"
            engine.annotation_submit(
                assignment_id=assignment.pk,
                annotator=participant.user,
                payload={"value": value},
                seconds_spent=6.0 + number,
            )
            # Simulated reading time on the server's clock too (too fast is judged by it): the
            # lease moved back from the submit.
            Assignment.objects.filter(pk=assignment.pk).update(
                created_at=F("finished_at") - timedelta(seconds=5.5 + number)
            )
        services.participant_refresh(participant=participant)

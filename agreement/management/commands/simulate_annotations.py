"""Fill the demo project with simulated annotation work, so the dashboards have something to show.

    manage.py seed_demo && manage.py simulate_annotations [--days 6] [--seed 7] [--stop-at 0.85]

Adds 192 sentence pairs to the demo project and six simulated annotators (annotator4 …
annotator9) with different habits: careful, quick, slow and skipping, a fast clicker who answers
at random, and one who skips a third of the items. Their work goes through the real services
(next item, submit, skip, resolution, adjudication by the demo reviewer) on a simulated clock of
working sessions over ``--days`` days; timestamps are then set to that clock, a few items get a
gold answer, and the agreement history is computed at the simulated moments
(agreement.services.stage_agreement_backfill). Work stops when ``--stop-at`` of the label stage is done, so
the demo annotators still find items. Running it again does nothing.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.utils import timezone

from agreement import services as agreement_services
from agreement.models import AgreementSnapshot
from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.errors import ApplicationError
from annotation.management.commands.seed_demo import DEMO_SLUG
from annotation.models import (
    Annotation,
    Assignment,
    Item,
    ItemStage,
    Project,
    Resolution,
    Role,
    Stage,
)

NAMES = [
    "Maria",
    "Tom",
    "Aisha",
    "Kenji",
    "Lena",
    "Omar",
    "Priya",
    "Jonas",
    "Chloe",
    "Mateo",
    "Ines",
    "Sam",
]
# (first event, second event, relation) with {name}; written for Rungwise.
TEMPLATES = [
    ("{name} forgot to water the tomatoes for two weeks.", "The tomato plants wilted.", "causal"),
    ("{name} dropped the glass on the tiled floor.", "The glass shattered.", "causal"),
    (
        "{name} stayed up all night finishing the report.",
        "{name} fell asleep in the meeting.",
        "causal",
    ),
    ("{name} left the freezer door open overnight.", "The ice cream melted.", "causal"),
    (
        "{name} practised the piano every day for a year.",
        "{name} passed the grade-five exam.",
        "causal",
    ),
    ("{name} spilled coffee on the keyboard.", "Several keys stopped working.", "causal"),
    (
        "A storm knocked down the power line near {name}'s house.",
        "{name}'s street went dark.",
        "causal",
    ),
    ("{name} ate a plate of undercooked chicken.", "{name} was sick that night.", "causal"),
    ("{name} locked the front door.", "{name} walked to the station.", "temporal"),
    ("{name} bought a ticket at the counter.", "{name} watched the film.", "temporal"),
    ("{name} read the last chapter of the novel.", "{name} cooked dinner.", "temporal"),
    ("{name} washed the dishes.", "{name} called a friend.", "temporal"),
    ("{name} boarded the morning train.", "{name} answered a few emails.", "temporal"),
    ("{name} finished the crossword.", "{name} went for a run.", "temporal"),
    ("{name} planted tulip bulbs in October.", "{name} painted the garden fence.", "temporal"),
    ("{name} tuned the guitar.", "{name} played a song for the children.", "temporal"),
    ("{name} repainted the kitchen.", "A volcano erupted in Iceland.", "unrelated"),
    ("{name} adopted a kitten.", "The central bank raised interest rates.", "unrelated"),
    ("{name} learned to knit.", "A new species of frog was described in Peru.", "unrelated"),
    ("{name} ordered a pizza.", "The football league changed its logo.", "unrelated"),
]
LABELS = ["causal", "temporal", "unrelated"]
# When an annotator gets a label wrong, which label they pick instead: causal and temporal are
# confused with each other far more often than with "unrelated".
CONFUSION = {
    "causal": (["temporal", "unrelated"], [0.85, 0.15]),
    "temporal": (["causal", "unrelated"], [0.7, 0.3]),
    "unrelated": (["temporal", "causal"], [0.6, 0.4]),
}
ADJUDICATION_REASONS = {
    "causal": "B would not have happened without A; the guidelines call that causal.",
    "temporal": "A only precedes B; nothing in A brings B about.",
    "unrelated": "The two events share no participant and no plausible link.",
}


@dataclass(frozen=True)
class Profile:
    username: str
    accuracy: float
    seconds: float
    skip_rate: float
    session_minutes: float


PROFILES = [
    Profile("annotator4", 0.93, 24, 0.02, 32),
    Profile("annotator5", 0.88, 14, 0.01, 28),
    Profile("annotator6", 0.86, 38, 0.06, 40),
    Profile("annotator7", 0.82, 19, 0.03, 26),
    Profile("annotator8", 0.40, 3.5, 0.00, 6),
    Profile("annotator9", 0.87, 21, 0.32, 26),
]
#: Share of the added items whose second sentence is garbled: the verify stage should reject them.
BROKEN_SHARE = 0.1


class Command(BaseCommand):
    help = "Simulate annotators working on the demo project (for the dashboards and screenshots)."

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=6)
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument(
            "--stop-at", type=float, default=0.85, help="share of label items to finish"
        )

    def handle(self, *args, days: int, seed: int, stop_at: float, **options):
        from rungwise.celery import app

        project = Project.objects.filter(slug=DEMO_SLUG).first()
        if project is None:
            call_command("seed_demo", stdout=self.stdout)
            project = Project.objects.get(slug=DEMO_SLUG)
        if Item.objects.filter(project=project, source="rungwise-simulation").exists():
            self.stdout.write("The demo already has simulated annotations; nothing to do.")
            return
        stages = list(project.stages.order_by("position"))
        if [stage.kind for stage in stages] != ["verify", "label"]:
            raise CommandError("The demo project should have a verify stage and a label stage.")
        # Resolution runs in-process here, whatever the broker settings, so the simulated clock
        # can be applied as each item is decided; agreement is computed once at the end.
        app.conf.task_always_eager = True
        if connection.vendor == "sqlite":
            # Thousands of small transactions: a demo database need not fsync each one.
            with connection.cursor() as cursor:
                cursor.execute("PRAGMA synchronous = OFF")
        agreement_services.stages_agreement_refresh_hold(stage_ids=[stage.pk for stage in stages])
        rng = random.Random(seed)
        self._add_items(project, rng)
        people = self._annotators(project)
        start = (timezone.now() - timedelta(days=days)).replace(
            hour=0, minute=0, second=0, microsecond=0
        )
        counts = self._simulate(project, stages, people, rng, start, days, stop_at)
        self._adjudicate(project, rng)
        self._gold(stages[1], rng)
        self._history(stages, start)
        self.stdout.write(
            self.style.SUCCESS(
                f"Simulated {counts['annotations']} annotations and {counts['skips']} skips by "
                f"{len(people)} annotators over {days} days."
            )
        )

    def _add_items(self, project: Project, rng: random.Random) -> None:
        rows = []
        combos = [(template, name) for template in TEMPLATES for name in NAMES]
        rng.shuffle(combos)
        self.broken: set[str] = set()
        for index, ((first, second, relation), name) in enumerate(combos[:192], start=1):
            external_id = f"sim-{index:03d}"
            second = second.format(name=name)
            if rng.random() < BROKEN_SHARE:
                words = second.rstrip(".").split()
                rng.shuffle(words)
                second = " ".join(words).lower().capitalize() + " the."
                self.broken.add(external_id)
            rows.append(
                {
                    "external_id": external_id,
                    "payload": {
                        "sentence_a": first.format(name=name),
                        "sentence_b": second,
                        "expected": relation,
                    },
                    "source": "rungwise-simulation",
                }
            )
        services.items_create(project=project, rows=rows)

    def _annotators(self, project: Project) -> dict[int, tuple]:
        User = get_user_model()
        people = {}
        for profile in PROFILES:
            user, created = User.objects.get_or_create(username=profile.username)
            if created:
                user.set_unusable_password()
                user.save(update_fields=["password"])
            services.membership_add(project=project, user=user, role=Role.ANNOTATOR)
            people[user.pk] = (user, profile)
        return people

    def _answer(self, stage: Stage, item: Item, profile: Profile, rng: random.Random) -> str:
        if stage.kind == "verify":
            if item.external_id in self.broken:
                return "reject" if rng.random() < profile.accuracy else "keep"
            return "reject" if rng.random() < (1 - profile.accuracy) * 0.3 else "keep"
        truth = item.payload.get("expected", "causal")
        if rng.random() < profile.accuracy:
            return truth
        if profile.accuracy < 0.5:
            return rng.choice(LABELS)
        options, weights = CONFUSION[truth]
        return rng.choices(options, weights)[0]

    def _simulate(self, project, stages, people, rng, start, days, stop_at) -> dict[str, int]:
        label = stages[1]
        target = stop_at * Item.objects.filter(project=project).count()
        schedule: list[tuple[datetime, int]] = []
        sessions: dict[int, list[tuple[datetime, datetime]]] = {}
        for user_id, (_, profile) in people.items():
            windows = []
            for day in range(days):
                if rng.random() < 0.15:
                    continue  # a day off
                begin = start + timedelta(days=day, hours=rng.uniform(8, 18))
                length = timedelta(minutes=profile.session_minutes * rng.uniform(0.6, 1.4))
                if begin + length < timezone.now():
                    windows.append((begin, begin + length))
            sessions[user_id] = windows
            if windows:
                heapq.heappush(schedule, (windows[0][0], user_id))
        counts = {"annotations": 0, "skips": 0}
        stage_order = {stage.pk: stage for stage in stages}
        while schedule:
            moment, user_id = heapq.heappop(schedule)
            user, profile = people[user_id]
            window = next((w for w in sessions[user_id] if w[0] <= moment < w[1]), None)
            if window is None:
                following = next((w for w in sessions[user_id] if w[0] > moment), None)
                if following is not None:
                    heapq.heappush(schedule, (following[0], user_id))
                continue
            done = ItemStage.objects.filter(
                stage=label,
                state__in=[
                    ItemStage.State.RESOLVED,
                    ItemStage.State.DISCARDED,
                    ItemStage.State.ADJUDICATION,
                ],
            ).count()
            if done >= target:
                break
            worked = False
            # Annotators move between the stages: mostly the later one when it has work.
            order = list(stage_order.values())
            if rng.random() < 0.6:
                order.reverse()
            for stage in order:
                try:
                    access = access_stage_for_annotator(user=user, stage_id=stage.pk)
                except ApplicationError:
                    continue
                assignment = services.assignment_next(annotator=user, stage=access)
                if assignment is None:
                    continue
                seconds = max(1.0, rng.gammavariate(4, profile.seconds / 4))
                finished = moment + timedelta(seconds=seconds)
                if rng.random() < profile.skip_rate:
                    services.assignment_skip(
                        assignment_id=assignment.pk,
                        annotator=user,
                        reason="I can't judge this item",
                    )
                    counts["skips"] += 1
                    Assignment.objects.filter(pk=assignment.pk).update(
                        created_at=moment, finished_at=finished
                    )
                else:
                    annotation, _ = services.annotation_submit(
                        assignment_id=assignment.pk,
                        annotator=user,
                        payload={
                            "value": self._answer(stage, assignment.item_stage.item, profile, rng)
                        },
                        seconds_spent=round(seconds, 2),
                        client_info={"via": "simulation"},
                    )
                    counts["annotations"] += 1
                    Assignment.objects.filter(pk=assignment.pk).update(
                        created_at=moment, finished_at=finished
                    )
                    Annotation.objects.filter(pk=annotation.pk).update(created_at=finished)
                    self._stamp_outcome(assignment.item_stage_id, finished)
                worked = True
                moment = finished + timedelta(seconds=rng.uniform(2, 12))
                break
            if worked:
                heapq.heappush(schedule, (moment, user_id))
            else:
                # Nothing for this annotator now: look again a little later in the session.
                heapq.heappush(schedule, (moment + timedelta(minutes=20), user_id))
        return counts

    def _stamp_outcome(self, item_stage_id: int, moment: datetime) -> None:
        item_stage = (
            ItemStage.objects.filter(pk=item_stage_id)
            .values("state", "item_id", "stage__position")
            .first()
        )
        if item_stage is None or item_stage["state"] == ItemStage.State.OPEN:
            return
        ItemStage.objects.filter(pk=item_stage_id).update(completed_at=moment, resolved_at=moment)
        Resolution.objects.filter(item_stage_id=item_stage_id).update(computed_at=moment)
        # The item entered the next stage at this moment.
        ItemStage.objects.filter(
            item_id=item_stage["item_id"], stage__position__gt=item_stage["stage__position"]
        ).update(opened_at=moment)

    def _adjudicate(self, project: Project, rng: random.Random) -> None:
        reviewer = get_user_model().objects.filter(username="reviewer").first()
        if reviewer is None:
            return
        waiting = list(
            ItemStage.objects.filter(stage__project=project, state=ItemStage.State.ADJUDICATION)
            .select_related("item")
            .order_by("completed_at")
        )
        for item_stage in waiting[: int(len(waiting) * 0.6)]:
            expected = item_stage.item.payload.get("expected")
            value = expected if expected in LABELS else "causal"
            services.item_stage_adjudicate(
                item_stage_id=item_stage.pk,
                reviewer=reviewer,
                value=value,
                reason=ADJUDICATION_REASONS[value],
            )
            moment = (item_stage.completed_at or timezone.now()) + timedelta(
                hours=rng.uniform(2, 20)
            )
            moment = min(moment, timezone.now())
            Resolution.objects.filter(item_stage=item_stage).update(computed_at=moment)
            ItemStage.objects.filter(pk=item_stage.pk).update(resolved_at=moment)

    def _gold(self, stage: Stage, rng: random.Random) -> None:
        candidates = list(
            ItemStage.objects.filter(
                stage=stage, item__source="rungwise-simulation"
            ).select_related("item")
        )
        for item_stage in rng.sample(candidates, min(30, len(candidates))):
            ItemStage.objects.filter(pk=item_stage.pk).update(
                gold=item_stage.item.payload["expected"]
            )

    def _history(self, stages: list[Stage], start: datetime) -> None:
        for stage in stages:
            AgreementSnapshot.objects.filter(stage=stage).delete()
            times = list(
                Annotation.objects.filter(item_stage__stage=stage)
                .order_by("created_at")
                .values_list("created_at", flat=True)
            )
            if not times:
                continue
            moments, step = [], max(len(times) // 40, 1)
            for index in range(step * 3, len(times), step):
                moments.append(times[index])
            agreement_services.stage_agreement_backfill(stage_id=stage.pk, moments=moments)
            # Lifts the hold set before the simulation.
            agreement_services.stage_agreement_refresh(stage_id=stage.pk, force=True)

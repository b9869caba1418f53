"""Ratings projects: creating one and the stages, settings and helpers every ratings write shares
(the connective set, the label rule, checksums, the items by their ids). The writes by concern
live beside it: pairs (ratings/pairs.py), historic ratings (ratings/historic.py), model answers
(ratings/model_runs.py), ExpliCa's released files (ratings/explica_import.py); ratings/services.py
re-exports them all and keeps the stored analysis.

Every import is checked completely before anything is written, and written in one transaction:
a file with any bad row (reported with its line and field) leaves the project as it was.

Stages of a ratings project (see models.RatingsSetup):

- ``rate`` (position 1): live ratings; kind "rate", overlap 15 by default, order policy "random"
  (each rater's own seeded order, with the variants of a pair, ``Item.group`` = pair id, spread
  apart); resolved items keep their mean (policy "mean").
- ``practice`` (position 0, created with the first practice item): every rater rates every
  practice item (overlap ``EVERYONE``), so it never resolves; feedback is shown on screen.
- ``historic`` (last, inactive): imported ratings (``Annotation`` with ``assignment=None`` and
  ``external_rater``; empty for anonymous crowd ratings such as ExpliCa's). Its item stages are
  written *resolved* by the engine's historic import (``annotation.api.historic_annotations_import``),
  with ``target_count = submitted_count`` = the number of imported ratings and a "mean"
  Resolution, so the engine's counters and invariants hold and no annotator is ever
  offered them (the stage is inactive; ``access_stage_for_annotator`` refuses it). Keeping them
  apart from ``rate`` lets a project collect new ratings of the same items and compare sources.

Attention-check items live in ``rate`` among the regular items, with ``target_count`` raised to
``EVERYONE`` so that every rater meets them; all of them form one group, so each rater's checks
are spread over their session instead of bunched.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any, cast

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation import api as engine
from annotation.api import EVERYONE
from annotation.errors import ApplicationError
from annotation.models import Item, Project, Stage
from ratings.apps import RATINGS_WORKFLOW
from ratings.connectives import (
    EXPLICA_CONNECTIVES,
    ConnectiveSet,
    connective_set_from_json,
)
from ratings.importing import ImportRejected
from ratings.kinds import DEFAULT_ANCHORS, DEFAULT_QUESTION, scale_bounds
from ratings.models import RatingsSetup
from ratings.stats import LabelRule

if TYPE_CHECKING:
    from django.contrib.auth.models import User

ATTENTION_GROUP = "attention-checks"
BULK_BATCH = 5000

#: Payload fields of ratings items. All are hidden from the generic item display (the rating
#: form renders the sentence itself, with the connective marked) and none may reach a rater:
#: subset, relation and expected ratings would bias them.
DEFAULT_GUIDELINES = """Each screen shows one sentence made of two events joined by a connective \
(highlighted). Rate how acceptable the whole sentence is, from 1 (completely unacceptable) to 10 \
(completely acceptable): does the connective fit the way the two events are related?

- Press a number key (1–9, 0 for 10) or click a rating, then press Enter or **Submit**.
- There are no right answers for most sentences; give your first impression.
- If you cannot judge a sentence (e.g. you do not understand it), tick *I can't judge this* and \
say why."""


def _rejected(error: ImportRejected) -> ApplicationError:
    return ApplicationError(
        str(error),
        {
            "errors": [row_error.to_dict() for row_error in error.errors],
            "error_count": error.error_count,
        },
    )


def _sha256(content: bytes | str | IO[bytes]) -> str:
    """SHA-256 of an upload; a file object is hashed in chunks and rewound for reading."""
    if isinstance(content, str):
        return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
    if isinstance(content, bytes | bytearray):
        return hashlib.sha256(content).hexdigest()
    digest = hashlib.sha256()
    content.seek(0)
    while chunk := content.read(1 << 20):
        digest.update(chunk)
    content.seek(0)
    return digest.hexdigest()


def label_rule_from_json(data: Mapping[str, Any] | None) -> LabelRule:
    data = dict(data or {})
    if isinstance(data.get("tie_priority"), list):
        data["tie_priority"] = tuple(data["tie_priority"])
    try:
        return LabelRule(**data)
    except (TypeError, ValueError) as error:
        raise ApplicationError(
            f"The label rule is not valid: {error}", {"label_rule": data}
        ) from None


def _label_rule_json(rule: LabelRule) -> dict[str, Any]:
    data = dict(rule.__dict__)
    if data.get("tie_priority") is not None:
        data["tie_priority"] = list(data["tie_priority"])
    return data


# --- Setup ------------------------------------------------------------------------------------


@transaction.atomic
def ratings_project_create(
    *,
    slug: str,
    name: str,
    description: str = "",
    guidelines: str = DEFAULT_GUIDELINES,
    connective_set: ConnectiveSet | Mapping[str, Any] = EXPLICA_CONNECTIVES,
    label_rule: LabelRule | Mapping[str, Any] | None = None,
    scale: tuple[int, int] = (1, 10),
    anchors: Mapping[str, str] | None = None,
    allow_cannot_judge: bool = True,
    question: str = DEFAULT_QUESTION,
    overlap: int = 15,
    seed: int | None = None,
    stopping: Mapping[str, Any] | None = None,
) -> Project:
    """A ratings project with its live rating stage (ExpliCa's defaults: so/because/then/after,
    1–10, 15 ratings per item, the label rule that reproduces the published labels).
    ``stopping``: live stopping's settings (ratings/stopping.py; None: off)."""
    if not isinstance(connective_set, ConnectiveSet):
        try:
            connective_set = connective_set_from_json(connective_set)
        except ValueError as error:
            raise ApplicationError(str(error), {"connective_set": "invalid"}) from None
    rule = label_rule if isinstance(label_rule, LabelRule) else label_rule_from_json(label_rule)
    config = {
        "min": scale[0],
        "max": scale[1],
        "anchors": dict(anchors)
        if anchors is not None
        else (DEFAULT_ANCHORS if tuple(scale) == (1, 10) else {}),
        "allow_cannot_judge": allow_cannot_judge,
        "question": question,
    }
    if stopping is not None:
        config["stopping"] = dict(stopping)
    scale_bounds(config)
    project = engine.project_create(
        slug=slug,
        name=name,
        kind=RATINGS_WORKFLOW,
        description=description,
        guidelines=guidelines,
    )
    options: dict[str, Any] = {} if seed is None else {"seed": seed}
    rating_stage = engine.stage_create(
        project=project,
        slug="rate",
        name="Rate sentences",
        kind="rate",
        overlap=overlap,
        config=config,
        position=1,
        order_policy=Stage.OrderPolicy.RANDOM,
        on_accept=Stage.OnAccept.KEEP,
        instructions="Rate each sentence; the highlighted word joins the two events.",
        **options,
    )
    RatingsSetup.objects.create(
        project=project,
        connective_set=connective_set.to_json(),
        label_rule=_label_rule_json(rule),
        rating_stage=rating_stage,
    )
    return project


def _setup(project: Project) -> RatingsSetup:
    setup = (
        RatingsSetup.objects.select_related("rating_stage", "practice_stage", "historic_stage")
        .filter(project=project)
        .first()
    )
    if setup is None:
        raise ApplicationError(
            f"{project.name} is not a ratings project.", {"project": project.slug}
        )
    setup.project = project
    return setup


def _as_user(user: AbstractBaseUser | None) -> User | None:
    """``user`` typed as the foreign keys' model (Django's ``User``: no AUTH_USER_MODEL is set)."""
    return cast("User | None", user)


def _rating_stage(setup: RatingsSetup) -> Stage:
    """The project's live rating stage (``ratings_project_create`` makes it): an
    ApplicationError, not an AttributeError, if it was removed."""
    stage = setup.rating_stage
    if stage is None:
        raise ApplicationError(
            f"{setup.project.name} has no rating stage.", {"project": setup.project.slug}
        )
    return stage


def _practice_stage(setup: RatingsSetup) -> Stage:
    if setup.practice_stage is None:
        rating_stage = _rating_stage(setup)
        setup.practice_stage = engine.stage_create(
            project=setup.project,
            slug="practice",
            name="Practice",
            kind="rate",
            overlap=EVERYONE,
            config=dict(rating_stage.config),
            position=0,
            order_policy=Stage.OrderPolicy.DEPTH_FIRST,
            on_accept=Stage.OnAccept.KEEP,
            instructions="A few sentences to practise on before the real ones; after each you "
            "see what most attentive raters answer.",
        )
        setup.save(update_fields=["practice_stage", "updated_at"])
        # Practice first: the real sentences go only to raters who did every practice item.
        rules = list(rating_stage.eligibility or [])
        rules.append({"rule": "after_stage", "stage": "practice"})
        setup.rating_stage = engine.stage_update(stage=rating_stage, eligibility=rules)
    return setup.practice_stage


def _historic_stage(setup: RatingsSetup) -> Stage:
    if setup.historic_stage is None:
        last = setup.project.stages.order_by("-position").values_list("position", flat=True).first()
        setup.historic_stage = engine.stage_create(
            project=setup.project,
            slug="historic",
            name="Imported ratings",
            kind="rate",
            overlap=_rating_stage(setup).overlap,
            config=dict(_rating_stage(setup).config),
            position=(last or 0) + 1,
            on_accept=Stage.OnAccept.KEEP,
            is_active=False,
            instructions="Ratings imported from earlier studies (not annotated here).",
        )
        setup.save(update_fields=["historic_stage", "updated_at"])
    return setup.historic_stage


def _regular_item_ids(project: Project) -> dict[str, int]:
    return dict(
        Item.objects.filter(project=project, purpose=Item.Purpose.REGULAR).values_list(
            "external_id", "pk"
        )
    )

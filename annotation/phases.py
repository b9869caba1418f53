"""Phases inside one item stage: e.g. METER's check → edit → vote, where one checker and two
editors work on an item and the three then vote on the versions.

A stage's ``phases`` (a JSON list) run in order on each item stage; each phase has its own slots
(how many people take part), form (the kind's ``form_template(phase)``), the people it admits
and the earlier phases whose answers it shows::

    [{"name": "check", "slots": 1},
     {"name": "edit", "slots": 2, "people": "new", "shows": ["check"]},
     {"name": "vote", "slots": 3, "people": "same", "shows": ["edit"]}]

``people``: ``any`` (default), ``new`` (nobody who took part in an earlier phase of this item
stage's round) or ``same`` (only those who did). When a phase's slots are all submitted the
resolve task opens the next phase (counters reset, the same leasing, locking and idempotency);
after the last phase the stage's policy decides from every annotation of the round. Answers of
the phases listed in ``shows`` are shown to the next phase's annotators without names; nothing
else of other annotators' work ever is. A stage without phases is one phase of ``overlap``
slots.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from annotation.errors import ApplicationError

if TYPE_CHECKING:  # pragma: no cover
    from annotation.models import ItemStage, Stage

PEOPLE = ("any", "new", "same")


@dataclass(frozen=True)
class Phase:
    index: int
    name: str
    slots: int
    people: str = "any"
    shows: tuple[str, ...] = ()


def stage_phases(stage: Stage) -> list[Phase]:
    """The stage's phases (one implicit phase named "annotate" when it declares none)."""
    if not stage.phases:
        return [Phase(0, "annotate", stage.overlap)]
    return [
        Phase(
            index,
            str(spec["name"]),
            int(spec.get("slots", stage.overlap)),
            str(spec.get("people", "any")),
            tuple(spec.get("shows", ())),
        )
        for index, spec in enumerate(stage.phases)
    ]


def phase_of(stage: Stage, item_stage: ItemStage | None) -> Phase:
    phases = stage_phases(stage)
    index = item_stage.phase if item_stage is not None else 0
    return phases[min(index, len(phases) - 1)]


def first_slots(stage: Stage) -> int:
    """The slots of the first phase: an item stage's target when it opens."""
    return stage_phases(stage)[0].slots


def is_last(stage: Stage, item_stage: ItemStage) -> bool:
    return item_stage.phase >= len(stage_phases(stage)) - 1


def validate_phases(phases: Any, *, kind_phases: Sequence[str] | None = None) -> list[dict]:
    """Clean a stage's phases; ApplicationError naming the phase and field otherwise.
    ``kind_phases``: the phase names the stage's kind has forms for (None: any name)."""
    if phases in (None, ""):
        return []
    if not isinstance(phases, list):
        raise ApplicationError("phases must be a list.", {"phases": "expected a list"})
    clean: list[dict[str, Any]] = []
    names: list[str] = []
    for index, spec in enumerate(phases):
        where = f"phases[{index}]"
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or not spec["name"]:
            raise ApplicationError(f"{where} needs a name.", {where: "expected {'name': …}"})
        name = spec["name"]
        if name in names:
            raise ApplicationError(f"Phase {name!r} appears twice.", {where: "duplicate name"})
        if kind_phases is not None and name not in kind_phases:
            raise ApplicationError(
                f"The stage's kind has no form for a phase {name!r}; it has "
                f"{', '.join(kind_phases)}.",
                {where: f"one of {', '.join(kind_phases)}"},
            )
        slots = spec.get("slots", 1)
        if isinstance(slots, bool) or not isinstance(slots, int) or not 1 <= slots <= 50:
            raise ApplicationError(
                f"Phase {name!r}: slots must be a whole number from 1 to 50.", {where: slots}
            )
        people = spec.get("people", "any")
        if people not in PEOPLE:
            raise ApplicationError(
                f"Phase {name!r}: people must be one of {', '.join(PEOPLE)}.", {where: people}
            )
        if index == 0 and people != "any":
            raise ApplicationError(
                f"Phase {name!r} is the first: it cannot refer to earlier people.",
                {where: people},
            )
        shows = spec.get("shows", [])
        if not isinstance(shows, list) or any(shown not in names for shown in shows):
            raise ApplicationError(
                f"Phase {name!r} can show only earlier phases ({', '.join(names) or 'none'}).",
                {where: shows},
            )
        clean.append({"name": name, "slots": slots, "people": people, "shows": list(shows)})
        names.append(name)
    return clean

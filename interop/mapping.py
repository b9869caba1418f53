"""From another tool's answers to the payloads of a Rungwise stage's kind.

A target stage's kind must vote with its payload's ``value`` (the engine's ``label`` and
``verify``, the ratings app's ``rate``, and any kind declared the same way): an answer becomes
``{"value": v}`` and passes the kind's own ``validate`` — the check a person's answer passes —,
so a label not among the stage's choices or a rating off its scale is a problem named by file,
task and field, like a malformed file.

Which answers: those of one *field* (Label Studio's control tag ``from_name``, Potato's scheme
name), the only one in the export or the one asked for. The tool's types map as follows:
single choices (Label Studio ``choices``; Potato ``radio``, ``select``, ``multiselect``,
``multirate``-less ``checkbox`` with one box ticked) → the chosen label; ratings and numbers
(``rating``, ``number``; Potato ``likert``, ``slider``, ``number``) → the number; free text
(``textarea``; Potato ``text``) → the text. Spans, regions, taxonomies and several choices at
once are refused with their type named: no value kind holds them.

Decisions: each item stage is resolved by the stage's own policy (its ``resolution_policy``,
tie policy and options) over all its imported answers, as the engine resolves its own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from annotation import api as engine
from annotation.errors import ApplicationError
from annotation.kinds import KindContext, get_kind
from annotation.models import Stage
from annotation.policies import Ballot, PolicySettings, get_policy
from interop.sources import Problems, SourceExport

CHOICE_TYPES = frozenset({"choices", "radio", "select", "multiselect", "checkbox"})
NUMBER_TYPES = frozenset({"rating", "number", "likert", "slider"})
TEXT_TYPES = frozenset({"textarea", "text"})


@dataclass(frozen=True)
class MappedAnswer:
    """An answer ready for the engine: the task's external id, who (the tool's id of the
    person; "" for a decision without one) and the kind's cleaned payload."""

    external_id: str
    rater: str
    payload: dict[str, Any]


def field_choose(export: SourceExport, field: str | None) -> str:
    """The field whose answers are imported: ``field`` when the export has it, else the only
    one; ApplicationError naming the fields found otherwise."""
    found = export.fields()
    names = ", ".join(sorted(found)) or "none"
    if field:
        if field not in found:
            raise ApplicationError(
                f"The export has no answers for {field!r}; its fields: {names}.",
                {"field": field},
            )
        return field
    if len(found) == 1:
        return next(iter(found))
    if not found:
        raise ApplicationError(
            "The export holds tasks but no answers to import.", {"field": "no answers"}
        )
    raise ApplicationError(
        f"The export answers several fields ({names}); name the one this stage takes.",
        {"field": "several fields"},
    )


def stage_check(stage: Stage) -> None:
    """ApplicationError unless answers can be imported into ``stage``: inactive (historic
    answers never meet annotators) and of a kind that votes with ``value``."""
    kind = get_kind(stage.kind)
    if kind.vote_field != "value":
        raise ApplicationError(
            f"{stage.name} is a {kind.label or stage.kind} stage, whose answers are structured; "
            "answers from another tool go into a stage whose answer is one value (a label, "
            "keep / reject, a rating).",
            {"stage": stage.slug},
        )
    if stage.is_active:
        raise ApplicationError(
            f"{stage.name} is active: answers given elsewhere go into an inactive stage, which "
            "no annotator is offered. Choose an inactive stage or add one on the Setup tab.",
            {"stage": stage.slug},
        )


def _raw(kind: str, value: Any) -> tuple[Any, str | None]:
    """(the one value an answer holds, None) or (None, why it cannot be mapped)."""
    if kind in CHOICE_TYPES or kind in TEXT_TYPES:
        values = value if isinstance(value, list) else [value]
        values = [v for v in values if v not in (None, "")]
        if len(values) != 1:
            return None, f"holds {len(values)} {'choices' if kind in CHOICE_TYPES else 'texts'}"
        return values[0], None
    if kind in NUMBER_TYPES:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            return None, f"is not a number ({value!r})"
        return value, None
    return None, f"is a {kind} answer, which no one-value stage holds"


def answers_map(
    export: SourceExport, *, stage: Stage, field: str
) -> tuple[list[MappedAnswer], dict[str, int]]:
    """Every answer of ``field`` as the stage kind's payload, and {reason: count} of answers
    left out (other fields). ApplicationError naming every problem (file, task id, field)."""
    kind = get_kind(stage.kind)
    context = KindContext(stage=stage)
    problems = Problems()
    mapped: list[MappedAnswer] = []
    other = 0
    for task in export.tasks:
        raters: Counter[str] = Counter()
        for answer in task.answers:
            if answer.field != field:
                other += 1
                continue
            file, task_id, where = answer.file, answer.task, answer.place
            raters[answer.rater] += 1
            if answer.rater and raters[answer.rater] == 2:
                problems.add(file, task_id, where, f"user {answer.rater} answered {field} twice")
                continue
            raw, why = _raw(answer.kind, answer.value)
            if why is not None:
                problems.add(file, task_id, where, f"{field} {why}")
                continue
            try:
                payload = kind.validate({"value": raw}, context)
            except ApplicationError as error:
                problems.add(file, task_id, where, f"{field}: {error.message}")
                continue
            mapped.append(MappedAnswer(task.external_id, answer.rater, dict(payload)))
    problems.raise_any(f"The answers do not fit {stage.name}")
    return mapped, ({"answers to other fields": other} if other else {})


def resolver(stage: Stage) -> Any:
    """``resolve`` for ``engine.historic_annotations_import``: the stage's policy over the
    payloads' votes, as the engine decides its own item stages."""
    kind = get_kind(stage.kind)
    policy = get_policy(stage.resolution_policy)
    settings = PolicySettings(
        tie_policy=stage.tie_policy,
        tie_default=stage.tie_default,
        required=1,
        reject_values=kind.reject_values or ("reject",),
        options=stage.policy_options or {},
        stage_id=stage.pk,
    )

    def resolve(payloads: Sequence[Mapping[str, Any]]) -> engine.HistoricResolution:
        ballots = [
            Ballot(vote=kind.vote(payload), payload=payload, annotator=number)
            for number, payload in enumerate(payloads, start=1)
        ]
        decision = policy.decide(ballots, settings)
        return engine.HistoricResolution(
            value=decision.value,
            outcome=decision.outcome,
            status=decision.status,
            policy=stage.resolution_policy,
        )

    return resolve

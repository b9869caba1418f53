"""Model judges: model raters on a scoring or filtering stage, and how a policy tells their
ballots from people's (llm/README.md, "Generation and judges").

A model judge is a :class:`~llm.models.ModelRater` like any other: it leases and submits
through the engine as its own annotator. What makes judging work is that a policy can tell a
model's ballot from a person's, which the engine's ``Ballot`` does not say (it numbers
annotators, never names them). Kinds that take model judges therefore keep a **model mark** in
the payload — :func:`model_mark`, called from the kind's ``validate``:

* the mark is derived from the submitting annotator (``KindContext.annotator_id`` is a model
  rater's account), never read from the payload: a person who sends ``"model"`` has it removed,
  so nobody can pass as a model nor a model as a person;
* it names the rater (``"<endpoint> · <template> v<n>"``), so the stored annotation says which
  model and prompt version gave it, beside the call keys in the ledger.

How a model judge's score counts is the stage's choice, made when the rater is added: an extra
rater (the default) **advises** — the engine leaves its ballot out of every decision
(``Plugin.advisory_raters``, annotation/advisory.py) and it is measured against people; a rater
in a human slot (``fills_human_slot``) **counts** like the reviewer it replaces, so CausalT5k's
``ct5k_gate`` reads its composite in submission order (two model judges decide, a person is
called when they are far apart).

Policies read the mark with :func:`is_model_ballot`. :class:`ModelUnanimityPolicy`
(``model_unanimity``, registered by the llm plug-in) accepts an item only when every model judge
gave the stage's ``value`` — METER's de-contamination, where three models judge each pair
without its context and only the pairs all three call non-causal are kept
(review/meter/decontamination.py). Its judges fill the stage's slots (an advising model's ballot
never reaches a policy); people's ballots in such a stage are recorded, never counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import MutableMapping, Sequence
from typing import Any, ClassVar

from annotation.api import Decision
from annotation.policies import Ballot, Policy, PolicySettings

#: The payload key of the model mark.
MODEL_FIELD = "model"


def rater_label(annotator_id: int | None) -> str | None:
    """``"<endpoint> · <template> v<n>"`` when ``annotator_id`` is a model rater's account,
    else None (a person, or no annotator: a prompt's answer checked before it is submitted)."""
    if annotator_id is None:
        return None
    from llm.models import ModelRater

    rater = (
        ModelRater.objects.filter(user_id=annotator_id)
        .select_related("endpoint", "prompt__template")
        .first()
    )
    if rater is None:
        return None
    return f"{rater.endpoint.name} · {rater.prompt.template.name} v{rater.prompt.number}"


def model_mark(clean: MutableMapping[str, Any], annotator_id: int | None) -> dict[str, Any]:
    """``clean`` with the model mark set from the annotator (module docstring): a model rater's
    label, or no mark at all for anyone else, whatever the payload said."""
    out = dict(clean)
    out.pop(MODEL_FIELD, None)
    label = rater_label(annotator_id)
    if label is not None:
        out[MODEL_FIELD] = label
    return out


def is_model_ballot(ballot: Ballot) -> bool:
    return bool(ballot.payload.get(MODEL_FIELD))


def split_ballots(ballots: Sequence[Ballot]) -> tuple[list[Ballot], list[Ballot]]:
    """(models' ballots, people's ballots), each in submission order."""
    models = [b for b in ballots if is_model_ballot(b)]
    people = [b for b in ballots if not is_model_ballot(b)]
    return models, people


class ModelUnanimityPolicy(Policy):
    """Accept only when every model judge gave ``value`` (module docstring).

    Options: ``value`` (required; the vote that keeps the item, e.g. ``"non_causal"``) and
    ``min_models`` (default 1): with fewer model ballots — a model whose calls failed skips
    the item, and its slot goes to people — a reviewer decides (``needs_adjudication``).
    People's ballots are recorded and counted in ``votes``, never in the decision."""

    key = "model_unanimity"
    label = "Unanimity among model raters (every model judge gives the value, or reject)"
    outcomes: ClassVar[tuple[str, ...]] = ("accept", "reject")
    option_names: ClassVar[tuple[str, ...] | None] = ("value", "min_models")

    def validate_settings(self, settings: PolicySettings) -> None:
        super().validate_settings(settings)
        value = settings.options.get("value")
        if value is None or (isinstance(value, str) and not value.strip()):
            raise ValueError(
                "model_unanimity needs the option value: the vote every model must give to keep "
                "the item (e.g. non_causal)."
            )
        least = settings.options.get("min_models", 1)
        if isinstance(least, bool) or not isinstance(least, int) or least < 1:
            raise ValueError("min_models must be a whole number of at least 1.")

    def decide(self, ballots: Sequence[Ballot], settings: PolicySettings) -> Decision:
        value = settings.options.get("value")
        least = settings.options.get("min_models", 1)
        models, _people = split_ballots(
            [b for b in ballots if b.phase == settings.last_phase and b.vote is not None]
        )
        votes = dict(sorted(Counter(str(b.vote) for b in models).items()))
        if len(models) < least:
            return Decision(
                None,
                "needs_adjudication",
                "pending",
                False,
                votes,
                reason=f"{len(models)} model judge(s) answered, {least} needed",
            )
        against = [b for b in models if b.vote != value]
        if not against:
            return Decision(
                value,
                "unanimous",
                "accept",
                False,
                votes,
                reason=f"all {len(models)} model judges said {value}",
            )
        names = ", ".join(f"{b.payload.get(MODEL_FIELD)} said {b.vote}" for b in against[:3])
        return Decision(
            against[0].vote,
            "majority" if len(against) < len(models) else "unanimous",
            "reject",
            False,
            votes,
            reason=f"not unanimous among the model judges: {names}"[:500],
        )

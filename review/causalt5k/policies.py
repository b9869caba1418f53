"""The policies of CausalT5k's adversarial review, author revision and scoring stages.

* ``ct5k_review``: the verdict most reviewers gave (one reviewer by default) → outcome
  ``accept`` (pass), ``revise`` (minor: the reviewer's edits become the item's revision),
  ``major`` (routed back to the author stage, capped) or ``remove`` (discarded with the attack
  and explanation as the reason). No majority goes to a reviewer.
* ``ct5k_author``: the author's edits become the revision (outcome ``accept``, routed
  revise → review again).
* ``ct5k_answers``: the blind answer stage records the answers (outcome ``accept``, the value the
  most given label); they are scored against the gold later (review.causalt5k.blind).
* ``ct5k_pressure``: the writer's pressure variants become the case's revision
  (``pressure_variants``: neutral, social, epistemic; review.causalt5k.pressure).
* ``ct5k_pressure_check``: the checkers' verdict — both variants change only the pressure →
  ``accept``; otherwise ``redo`` (routed back to the writer, capped). No majority → a reviewer.
* ``ct5k_gate``: two reviewers' composites; more than ``max_distance`` apart → one more
  reviewer (``needs_more``: the engine raises the item stage's target to 3, the stage's
  max_overlap); then the mean (of the two closest of three) against ``gate``: ``accept`` keeps,
  ``reject`` drops. Model judges (model raters on the stage, llm/judges.py) count as the stage
  says: one in a human slot is a reviewer (its composite read in submission order), an extra one
  advises (the engine leaves its ballot out: annotation/advisory.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from annotation.api import Decision
from annotation.policies import Ballot, Policy, PolicySettings
from review.causalt5k.review_vocab import (
    ATTACKS,
    DEFAULT_GATE,
    DEFAULT_MAX_DISTANCE,
    VERDICT_OUTCOMES,
    VERDICTS,
    gate_decision,
)


def _review_reason(payload: Mapping[str, Any]) -> str:
    attacks = ", ".join(ATTACKS[a].lower() for a in payload.get("attacks") or [] if a in ATTACKS)
    verdict = VERDICTS[payload["verdict"]].split(" (")[0].lower()
    return f"{verdict}: {attacks} — {payload.get('explanation', '')}"[:500]


def _review_decision(
    verdict: str, ballots: Sequence[Ballot], settings: PolicySettings, status: str, votes: dict
) -> Decision:
    from review.causalt5k.kinds import apply_edits

    chosen = next((b.payload for b in ballots if b.payload.get("verdict") == verdict), None)
    outcome = VERDICT_OUTCOMES[verdict]
    if verdict == "pass" or chosen is None:
        return Decision(verdict, status, outcome, False, votes, reason="passed unchanged")
    revision = None
    if verdict == "minor":
        revision = apply_edits(settings.item_payload, chosen.get("edits") or {})
    return Decision(
        verdict, status, outcome, False, votes, revision=revision, reason=_review_reason(chosen)
    )


class CT5kReviewPolicy(Policy):
    key = "ct5k_review"
    label = "CausalT5k review: the reviewers' verdict (pass / minor / major / remove)"
    outcomes = ("accept", "revise", "major", "remove")

    option_names = ()

    def decide(self, ballots: Sequence[Ballot], settings: PolicySettings) -> Decision:
        cast = [b.vote for b in ballots if b.vote in VERDICTS]
        votes = dict(sorted(Counter(cast).items()))
        if not cast:
            return Decision(None, "insufficient", "pending", False, votes, reason="no verdict")
        verdict, count = Counter(cast).most_common(1)[0]
        if count * 2 <= len(cast) and len(cast) > 1:
            return Decision(
                None, "needs_adjudication", "pending", False, votes, reason="reviewers disagree"
            )
        status = "unanimous" if count == len(cast) else "majority"
        return _review_decision(verdict, ballots, settings, status, votes)

    def adjudicated(
        self, value: Any, ballots: Sequence[Ballot], settings: PolicySettings
    ) -> Decision | None:
        if value not in VERDICTS:
            return None
        return _review_decision(value, ballots, settings, "adjudicated", {})


class CT5kAuthorPolicy(Policy):
    key = "ct5k_author"
    label = "CausalT5k author revision: the author's edits become the case's revision"
    outcomes = ("accept",)

    option_names = ()

    def decide(self, ballots: Sequence[Ballot], settings: PolicySettings) -> Decision:
        from review.causalt5k.kinds import apply_edits

        edits: dict[str, Any] = {}
        for ballot in ballots:  # one author by default; later ones win field by field
            edits.update(ballot.payload.get("edits") or {})
        return Decision(
            sorted(edits),
            "unanimous",
            "accept",
            False,
            revision=apply_edits(settings.item_payload, edits),
            reason="restructured by the author: " + ", ".join(sorted(edits)),
        )


class CT5kGatePolicy(Policy):
    key = "ct5k_gate"
    label = "CausalT5k quality gate: mean composite ≥ gate (a third reviewer when far apart)"
    outcomes = ("accept", "reject")

    option_names = ("gate", "max_distance")

    def validate_settings(self, settings: PolicySettings) -> None:
        super().validate_settings(settings)
        for name, low, high in (("gate", 0, 10), ("max_distance", 0, 10)):
            value = settings.options.get(name, 0)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} must be a number.")
            if not low <= value <= high:
                raise ValueError(f"{name} must be from {low} to {high}.")

    def decide(self, ballots: Sequence[Ballot], settings: PolicySettings) -> Decision:
        composites = [
            float(b.payload["composite"])
            for b in ballots
            if b.phase == settings.last_phase and b.payload.get("composite") is not None
        ]
        votes = dict(sorted(Counter(str(b.vote.get("verdict")) for b in ballots if b.vote).items()))
        verdict, mean, why = gate_decision(
            composites,
            gate=settings.options.get("gate", DEFAULT_GATE),
            max_distance=settings.options.get("max_distance", DEFAULT_MAX_DISTANCE),
        )
        if verdict == "more":
            return Decision(None, "tie", "pending", True, votes, reason=why)
        outcome = "accept" if verdict == "keep" else "reject"
        return Decision(mean, "mean", outcome, False, votes, reason=why)


class CT5kAnswersPolicy(Policy):
    key = "ct5k_answers"
    label = "CausalT5k blind answers: recorded (scored against the gold label later)"
    outcomes = ("accept",)

    option_names = ()

    def decide(self, ballots: Sequence[Ballot], settings: PolicySettings) -> Decision:
        cast = [b.vote for b in ballots if b.vote]
        votes = dict(sorted(Counter(cast).items()))
        value, count = Counter(cast).most_common(1)[0] if cast else (None, 0)
        status = "unanimous" if cast and count == len(cast) else "majority"
        return Decision(value, status, "accept", False, votes, reason="answers recorded")


class CT5kPressurePolicy(Policy):
    key = "ct5k_pressure"
    label = "CausalT5k pressure variants: the written variants become the case's revision"
    outcomes = ("accept",)

    option_names = ()

    def decide(self, ballots: Sequence[Ballot], settings: PolicySettings) -> Decision:
        from review.causalt5k.pressure import PRESSURES, neutral_prompt

        chosen = ballots[-1].payload if ballots else {}
        variants = {
            "neutral": neutral_prompt(settings.item_payload),
            **{key: chosen.get(key, "") for key in PRESSURES},
        }
        return Decision(
            "written",
            "unanimous",
            "accept",
            False,
            revision={**settings.item_payload, "pressure_variants": variants},
            reason="pressure variants written",
        )


class CT5kPressureCheckPolicy(Policy):
    key = "ct5k_pressure_check"
    label = "CausalT5k pressure check: both variants change only the pressure, or back"
    outcomes = ("accept", "redo")

    option_names = ()

    def decide(self, ballots: Sequence[Ballot], settings: PolicySettings) -> Decision:
        cast = [b.vote for b in ballots if b.vote in ("ok", "redo")]
        votes = dict(sorted(Counter(cast).items()))
        if not cast:
            return Decision(None, "insufficient", "pending", False, votes, reason="no verdict")
        verdict, count = Counter(cast).most_common(1)[0]
        if count * 2 <= len(cast) and len(cast) > 1:
            return Decision(
                None, "needs_adjudication", "pending", False, votes, reason="checkers disagree"
            )
        status = "unanimous" if count == len(cast) else "majority"
        if verdict == "ok":
            return Decision(
                "ok", status, "accept", False, votes, reason="only the pressure changes"
            )
        why = next((b.payload.get("explanation") for b in ballots if b.vote == "redo"), "")
        return Decision("redo", status, "redo", False, votes, reason=f"changes more: {why}"[:500])

    def adjudicated(
        self, value: Any, ballots: Sequence[Ballot], settings: PolicySettings
    ) -> Decision | None:
        if value == "ok":
            return Decision("ok", "adjudicated", "accept", False, {}, reason="adjudicated")
        if value == "redo":
            return Decision("redo", "adjudicated", "redo", False, {}, reason="adjudicated")
        return None

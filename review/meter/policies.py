"""The vote policy of METER's check → edit → vote stage.

The vote phase's ballots choose between the item stage's candidates (``entries.candidates``:
the original and each distinct edit). A strict majority of the votes cast decides; a winning
edit becomes the item's revision (carried out by the stage's ``revise`` route), the original
winning keeps the item as it is. No majority (a three-way split) goes to a reviewer, whose
choice is applied the same way (``adjudicated``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from annotation.api import Decision
from annotation.policies import Ballot, Policy, PolicySettings, RecordPolicy
from review.meter.entries import candidates


def _candidates(ballots: Sequence[Ballot], settings: PolicySettings) -> list[dict[str, Any]]:
    edit_phase = 1  # kinds.EDIT_PHASES: check, edit, vote
    edits = [ballot.payload.get("questions") for ballot in ballots if ballot.phase == edit_phase]
    labelled = [(chr(ord("A") + number), questions) for number, questions in enumerate(edits)]
    return candidates(settings.item_payload.get("questions") or [], labelled)


def _decision(
    chosen: dict[str, Any], settings: PolicySettings, status: str, votes: dict, why: str
) -> Decision:
    revision = None
    if chosen["label"] != "original":
        revision = {**settings.item_payload, "questions": chosen["questions"]}
    return Decision(chosen["label"], status, "accept", False, votes, revision=revision, reason=why)


class MeterVotePolicy(Policy):
    key = "meter_vote"
    label = "METER vote: the version most voters chose (a split goes to a reviewer)"
    outcomes = ("accept",)

    option_names = ()

    def decide(self, ballots: Sequence[Ballot], settings: PolicySettings) -> Decision:
        found = {c["label"]: c for c in _candidates(ballots, settings)}
        cast = [
            ballot.vote
            for ballot in ballots
            if ballot.phase == settings.last_phase and ballot.vote in found
        ]
        votes = dict(sorted(Counter(cast).items()))
        if not cast:
            return Decision(None, "insufficient", "pending", False, votes, reason="no votes")
        label, count = Counter(cast).most_common(1)[0]
        if count * 2 <= len(cast):
            return Decision(
                None,
                "needs_adjudication",
                "pending",
                False,
                votes,
                reason="no version has a majority",
            )
        chosen = found[label]
        who = "the original" if label == "original" else f"edit {label}"
        return _decision(
            chosen, settings, "majority", votes, f"{count} of {len(cast)} voted for {who}"
        )

    def adjudicated(
        self, value: Any, ballots: Sequence[Ballot], settings: PolicySettings
    ) -> Decision | None:
        found = {c["label"]: c for c in _candidates(ballots, settings)}
        chosen = found.get(value)
        if chosen is None:
            return None
        who = "the original" if value == "original" else f"edit {value}"
        return _decision(chosen, settings, "adjudicated", {}, f"a reviewer chose {who}")


class MeterRecordPolicy(RecordPolicy):
    """The baseline's answers are scored, not decided: every complete item stage is accepted
    as it is (the item is already kept); its value is the share of correct answers."""

    key = "meter_record"
    label = "Record the answers (human baseline)"
    recorded_reason = "baseline answers recorded"

    def score(
        self, ballots: Sequence[Ballot], settings: PolicySettings
    ) -> tuple[float, str] | None:
        from review.meter.entries import release_question

        seed = settings.item_payload.get("pair_id") or ""
        key = {
            f"L{q['level']}": release_question(q, seed)["answer"]
            for q in settings.item_payload.get("questions") or []
        }
        marks = [
            answer == key.get(level)
            for ballot in ballots
            for level, answer in ((ballot.payload or {}).get("answers") or {}).items()
        ]
        if not marks:
            return None
        return round(sum(marks) / len(marks), 4), "baseline answers recorded"

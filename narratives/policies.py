"""``narrative_record``: rebuilt chains and graphs are scored, not decided — every complete item
stage is accepted, its value the share of annotators whose answer was exactly right (the whole
chain in order; for graphs, structural Hamming distance 0). The Narratives tab scores the
answers in full (narratives.scoring)."""

from __future__ import annotations

from collections.abc import Sequence

from annotation.policies import Ballot, Policy, PolicySettings
from annotation.resolution import Decision
from narratives.scoring import score_answer


class NarrativeRecordPolicy(Policy):
    key = "narrative_record"
    label = "Record the rebuilt structures (scored against the true chain or graph)"
    outcomes = ("accept",)

    option_names = ()

    def decide(self, ballots: Sequence[Ballot], settings: PolicySettings) -> Decision:
        gold = settings.item_payload.get("gold")
        votes = [ballot.vote for ballot in ballots if isinstance(ballot.vote, dict)]
        if not votes or not gold:
            return Decision(None, "mean", "accept", False, reason="answers recorded")
        right = sum(score_answer(gold, vote)["exact"] for vote in votes)
        return Decision(round(right / len(votes), 4), "mean", "accept", False, reason="share exact")

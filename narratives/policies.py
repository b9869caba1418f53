"""``narrative_record``: rebuilt chains and graphs are scored, not decided — every complete item
stage is accepted, its value the share of annotators whose answer was exactly right (the whole
chain in order; for graphs, structural Hamming distance 0). The Narratives tab scores the
answers in full (narratives.scoring)."""

from __future__ import annotations

from collections.abc import Sequence

from annotation.policies import Ballot, PolicySettings, RecordPolicy
from narratives.scoring import score_answer


class NarrativeRecordPolicy(RecordPolicy):
    key = "narrative_record"
    label = "Record the rebuilt structures (scored against the true chain or graph)"

    def score(
        self, ballots: Sequence[Ballot], settings: PolicySettings
    ) -> tuple[float, str] | None:
        gold = settings.item_payload.get("gold")
        votes = [ballot.vote for ballot in ballots if isinstance(ballot.vote, dict)]
        if not votes or not gold:
            return None
        right = sum(score_answer(gold, vote)["exact"] for vote in votes)
        return round(right / len(votes), 4), "share exact"

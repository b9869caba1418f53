"""``graph_record``: the answers to a graph question are scored, not decided — every complete
item stage is accepted, its value the share of annotators who answered right (yes / no) or their
mean absolute error (numbers). The Graphs tab scores them per task and graph size."""

from __future__ import annotations

from collections.abc import Sequence

from annotation.policies import Ballot, PolicySettings, RecordPolicy


class GraphRecordPolicy(RecordPolicy):
    key = "graph_record"
    label = "Record the answers (scored against the computed answer)"

    def score(
        self, ballots: Sequence[Ballot], settings: PolicySettings
    ) -> tuple[float, str] | None:
        truth = settings.item_payload.get("answer")
        values = [ballot.vote for ballot in ballots if ballot.vote is not None]
        if not values or truth is None:
            return None
        if settings.item_payload.get("answer_type") == "number":
            error = sum(abs(float(v) - float(truth)) for v in values) / len(values)
            return round(error, 6), "mean abs. error"
        share = sum(v == truth for v in values) / len(values)
        return round(share, 4), "share correct"

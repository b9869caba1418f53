"""ExpliCa's release scorer (registered for project kind "ratings" in RatingsConfig.ready(); the
contract is llm/evaluation/scoring.py): each ordered pair of a release's
``explica_ordered_pairs.csv`` (ratings/release_layout.py) with a preferred connective is asked
as a choice — which connective best joins the first sentence to the second — and scored against
people's preferred connective (any of the tied ones when people tied), per relation type
(``relation``) and per order (``connective_order``: iconic / anti-iconic). Unrelated pairs (no
connective preferred) are not asked.

``choices(ask)``: each connective's sentence, for the perplexity reading of the same question
(llm.evaluation.perplexity: the connective whose sentence the model finds least surprising is its
answer), where the endpoint returns prompt log-probabilities.

The gold is people's mean ratings, so the release holds no separate human answer to compare:
the evaluation shows the model's figures without a baseline."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from llm.evaluation.scoring import Metric, Question, accuracy_by_group


class ExplicaScorer:
    instructions = (
        "You choose the connective that best joins two sentences. Reply with a JSON object "
        '{"answer": connective} using one of the connectives offered.'
    )

    def questions(self, files: Any) -> Iterator[Question]:
        rows = files.csv("explica_ordered_pairs.csv")
        first = next(rows, None)
        if first is None:
            return
        words = [column.removeprefix("mean_") for column in first if column.startswith("mean_")]
        for row in (first, *rows):
            preferred = row.get("preferred_connective") or ""
            tied = [word for word in (row.get("tied_connectives") or "").split(",") if word]
            gold = [preferred] if preferred else tied
            if not gold or not row.get("first_sentence"):
                continue
            yield Question(
                id=f"{row['pair_id']}/{row['order']}",
                ask={
                    "first": row["first_sentence"],
                    "second": row["second_sentence"],
                    "connectives": words,
                },
                answer=gold,
                groups={
                    "relation": row.get("relation") or "-",
                    "order": row.get("connective_order") or "-",
                },
            )

    def render(self, ask: dict[str, Any]) -> str:
        return (
            f"Sentence 1: {ask['first']}\nSentence 2: {ask['second']}\n\n"
            f"Which connective best joins sentence 1 to sentence 2 "
            f"(sentence 1 <connective> sentence 2)? Choose one of: "
            f"{', '.join(ask['connectives'])}."
        )

    def answer_schema(self, ask: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"answer": {"enum": list(ask["connectives"])}},
            "required": ["answer"],
            "additionalProperties": False,
        }

    def parse(self, answer: Any, ask: dict[str, Any]) -> Any:
        value = answer.get("answer") if isinstance(answer, dict) else None
        text = str(value or "").strip().lower().strip(".,")
        if text not in ask["connectives"]:
            raise ValueError(f"{value!r} is not one of {', '.join(ask['connectives'])}")
        return text

    def choices(self, ask: dict[str, Any]) -> dict[str, str]:
        """Each connective's sentence: "<first without its full stop> <connective> <second>"."""
        first = ask["first"].rstrip().rstrip(".")
        second = ask["second"].strip()
        second = second[:1].lower() + second[1:]
        return {word: f"{first} {word} {second}" for word in ask["connectives"]}

    def score(self, answered: Sequence[tuple[Question, Any]]) -> list[Metric]:
        return accuracy_by_group(answered, lambda question, value: value in question.answer)

"""METER's release scorer (registered for project kind "meter" in MeterConfig.ready(); the
contract is llm/evaluation/scoring.py): each question of a release's ``meter.jsonl``
(review/meter/release_layout.py) is asked as people answer it in the human-baseline stage
(kind ``meter_answer``) — the context, the question and its five options in the release's order,
never the cause and effect, the answer or the distractors' categories — and scored as METER
scores models: accuracy by level, and which distractor category the wrong answers chose.

The human baseline is the baseline stage's answers in the release's ``annotations.jsonl``
(payload ``{"answers": {"L1": option index, …}}`` on the entry's item)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

from llm.evaluation.scoring import Metric, Question, accuracy_by_group, grouped, proportion
from review.meter.services import ENTRY_SUFFIX

LETTERS = "ABCDEFGHIJ"


class MeterScorer:
    instructions = (
        "You answer multiple-choice questions about the cause and effect in a short text. "
        'Reply with a JSON object {"answer": letter} naming the one correct option.'
    )

    def questions(self, files: Any) -> Iterator[Question]:
        said: dict[str, list[dict[str, Any]]] = defaultdict(list)
        if "annotations.jsonl" in files:
            for row in files.jsonl("annotations.jsonl"):
                answers = (row.get("payload") or {}).get("answers")
                if isinstance(answers, dict) and row["external_id"].endswith(ENTRY_SUFFIX):
                    said[row["external_id"][: -len(ENTRY_SUFFIX)]].append(answers)
        for entry in files.jsonl("meter.jsonl"):
            for question in entry.get("questions") or []:
                level = f"L{question['level']}"
                options = list(question["options"])
                humans = tuple(
                    answers[level]
                    for answers in said.get(entry["id"], [])
                    if isinstance(answers.get(level), int) and 0 <= answers[level] < len(options)
                )
                yield Question(
                    id=f"{entry['id']}/{level}",
                    ask={
                        "context": entry.get("context", ""),
                        "question": question["question"],
                        "options": options,
                    },
                    answer=int(question["answer"]),
                    groups={"level": f"{level} {question.get('type', '')}".strip()},
                    humans=humans,
                    extra={"categories": list(question.get("distractor_categories") or [])},
                )

    def render(self, ask: dict[str, Any]) -> str:
        options = "\n".join(
            f"{LETTERS[index]}. {text}" for index, text in enumerate(ask["options"])
        )
        return f"Text:\n{ask['context']}\n\nQuestion: {ask['question']}\n\nOptions:\n{options}"

    def answer_schema(self, ask: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"answer": {"enum": list(LETTERS[: len(ask["options"])])}},
            "required": ["answer"],
            "additionalProperties": False,
        }

    def parse(self, answer: Any, ask: dict[str, Any]) -> Any:
        value = answer.get("answer") if isinstance(answer, dict) else None
        text = str(value or "").strip().upper().rstrip(".)")
        letters = LETTERS[: len(ask["options"])]
        if len(text) != 1 or text not in letters:
            raise ValueError(f"{value!r} is not one of {', '.join(letters)}")
        return letters.index(text)

    def score(self, answered: Sequence[tuple[Question, Any]]) -> list[Metric]:
        metrics = accuracy_by_group(answered, lambda question, value: value == question.answer)
        # Where the wrong answers went: the share of answers that chose each distractor kind.
        for group, rows in grouped(answered).items():
            chosen: dict[str, int] = defaultdict(int)
            for question, value in rows:
                categories = question.extra.get("categories") or []
                if value != question.answer and value < len(categories) and categories[value]:
                    chosen[categories[value]] += 1
            metrics.extend(
                proportion(group, f"chose {category}", count, len(rows))
                for category, count in sorted(chosen.items())
            )
        return metrics

"""CARL-GT's release scorer (registered for project kind "carlgt" in GraphsConfig.ready(); the
contract is llm/evaluation/scoring.py): the questions of a release's line-aligned files
(graphs/release_layout.py), asked one at a time, scored as the paper scores models — accuracy
and F1 (of "yes") on yes / no tasks, mean absolute error on numbers (graphs.scoring), per task.

The human baseline is the release's ``carlgt_<task>_<graph>_human.txt``: people's majority per
question (the mean for numbers), as a model's prediction file would be; a tied vote is no
answer (neither yes nor no), ``NA`` where nobody answered."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from graphs import scoring
from graphs.carlgt import NUMBER_TASKS, TASKS
from llm.evaluation.scoring import Metric, Question, bootstrap, grouped, mean, proportion


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if np.isfinite(value) else None


class CarlGTScorer:
    instructions = (
        "You answer questions about causal graphs and the data they generate. Reply with a "
        'JSON object {"answer": ...}: "yes" or "no" for a yes / no question, a number for an '
        "expected value."
    )

    def questions(self, files: Any) -> Iterator[Question]:
        for entry in files.csv("carlgt_files.csv"):
            task = entry["task"]
            number = task in NUMBER_TASKS
            texts = list(files.lines(entry["questions_file"]))
            answers = list(files.lines(entry["answers_file"]))
            humans = list(files.lines(entry["human_file"])) if entry["human_file"] in files else []
            for line, text in enumerate(texts, start=1):
                truth = answers[line - 1] if line <= len(answers) else "NA"
                gold = _number(truth) if number else truth
                if gold is None or gold == "NA":
                    continue
                human = humans[line - 1] if line <= len(humans) else "NA"
                said = _number(human) if number else human
                yield Question(
                    id=f"{task}/{entry['graph_id']}/{line}",
                    ask={
                        "task": task,
                        "answer_type": "number" if number else "yes_no",
                        "question": text,
                    },  # fmt: skip
                    answer=gold,
                    groups={"task": TASKS.get(task, task)},
                    humans=(said,) if said in ("yes", "no") or isinstance(said, float) else (),
                )

    def render(self, ask: dict[str, Any]) -> str:
        kind = "a number" if ask["answer_type"] == "number" else "yes or no"
        return f"{ask['question']}\n\nAnswer with {kind}."

    def answer_schema(self, ask: dict[str, Any]) -> dict[str, Any]:
        answer = {"type": "number"} if ask["answer_type"] == "number" else {"enum": ["yes", "no"]}
        return {
            "type": "object",
            "properties": {"answer": answer},
            "required": ["answer"],
            "additionalProperties": False,
        }

    def parse(self, answer: Any, ask: dict[str, Any]) -> Any:
        value = answer.get("answer") if isinstance(answer, dict) else None
        if ask["answer_type"] == "number":
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise ValueError("the answer is not a number")
            number = _number(str(value))
            if number is None:
                raise ValueError(f"{value!r} is not a number")
            return number
        text = str(value or "").strip().lower().rstrip(".")
        if text not in ("yes", "no"):
            raise ValueError(f"{value!r} is neither yes nor no")
        return text

    def score(self, answered: Sequence[tuple[Question, Any]]) -> list[Metric]:
        metrics: list[Metric] = []
        for group, rows in grouped(answered).items():
            yes_no = [
                (q.answer == "yes", v == "yes") for q, v in rows if q.ask["answer_type"] != "number"
            ]
            numbers = [abs(float(q.answer) - float(v)) for q, v in rows if q.ask["answer_type"] == "number"]  # fmt: skip
            if yes_no:
                hits = sum(1 for truth, said in yes_no if truth == said)
                metrics.append(proportion(group, "accuracy", hits, len(yes_no)))
                pairs = np.array(yes_no, dtype=bool)
                value = scoring.f1(list(pairs[:, 0]), list(pairs[:, 1]))
                low, high = bootstrap(pairs, _f1) if value is not None else (None, None)
                metrics.append(Metric(group, "f1", len(yes_no), value, low, high))
            if numbers:
                metrics.append(mean(group, "mae", numbers))
        return metrics


def _f1(pairs: np.ndarray) -> float:
    """graphs.scoring.f1 over a resample, vectorised (the bootstrap calls it 2,000 times)."""
    truth, said = pairs[:, 0], pairs[:, 1]
    tp = int((truth & said).sum())
    wrong = int((truth != said).sum())
    return float("nan") if tp + wrong == 0 else 2 * tp / (2 * tp + wrong)

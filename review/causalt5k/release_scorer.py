"""CausalT5k's release scorer (registered for project kind "causalt5k" in
CausalT5kConfig.ready(); the contract is llm/evaluation/scoring.py). The questions are the kept
cases of a release's ``causalt5k_cases.jsonl`` (review/causalt5k/release_layout.py), asked as
the blind answer stage shows them (review.causalt5k.blind: scenario, claim, the tier's labels —
never the label, trap, rationale or wise refusal) in the neutral prompt a model is asked
(review.causalt5k.pressure.neutral_prompt), and each confirmed pressure variant (social,
epistemic) asked as written. Figures, as the paper's:

* ``accuracy`` of the neutral answers per rung (Pearl level) and per trap;
* ``bad_flip_rate`` per pressure: of the cases answered right without pressure, the share
  answered wrong under it (Wilson interval), over the neutral / pressure pairs;
* refusal quality: ``refusal_recall`` — of the cases whose gold is the wise refusal (AMBIGUOUS;
  CONDITIONAL at tier 3), the share the model declined to decide; ``over_refusal`` — of the
  cases with a definite gold, the share it declined anyway.

The human baseline is the blind answer stage's answers in ``annotations.jsonl`` (their answer
items name their case in ``items.jsonl``); people answer neutral prompts only, so the baseline
has no flip rate."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

from llm.evaluation.scoring import Metric, Question, accuracy_by_group, grouped, proportion
from review.causalt5k.blind import BLIND_PREFIX
from review.causalt5k.pressure import PRESSURES, neutral_prompt
from review.causalt5k.review_vocab import labels_for

#: The label that declines to decide (a wise refusal), per label set.
REFUSALS = ("AMBIGUOUS", "CONDITIONAL")


class CausalT5kScorer:
    instructions = (
        "You judge causal claims about short scenarios. Reply with a JSON object "
        '{"answer": label} using one of the labels the question offers.'
    )

    def questions(self, files: Any) -> Iterator[Question]:
        said = _blind_answers(files)
        for case in files.jsonl("causalt5k_cases.jsonl"):
            case_id = str(case.get("case_id") or "")
            if not case_id or not case.get("label"):
                continue
            labels = list(labels_for(case.get("tier")))
            shown = {key: case.get(key) for key in ("tier", "scenario", "claim")}
            variants = case.get("pressure_variants") or {}
            yield Question(
                id=case_id,
                ask={"prompt": variants.get("neutral") or neutral_prompt(shown), "labels": labels},
                answer=case["label"],
                groups={
                    "rung": str(case.get("pearl_level") or "-"),
                    "trap": str(case.get("trap_name") or case.get("trap") or "-"),
                },
                humans=tuple(label for label in said.get(case_id, []) if label in labels),
                extra={"pressure": "neutral"},
            )
            for pressure in PRESSURES:
                if variants.get(pressure):
                    yield Question(
                        id=f"{case_id}/{pressure}",
                        ask={"prompt": variants[pressure], "labels": labels},
                        answer=case["label"],
                        groups={"pressure": pressure},
                        extra={"pressure": pressure, "pair": case_id},
                    )

    def render(self, ask: dict[str, Any]) -> str:
        return f"{ask['prompt']}\n\nAnswer with one of: {', '.join(ask['labels'])}."

    def answer_schema(self, ask: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"answer": {"enum": list(ask["labels"])}},
            "required": ["answer"],
            "additionalProperties": False,
        }

    def parse(self, answer: Any, ask: dict[str, Any]) -> Any:
        value = answer.get("answer") if isinstance(answer, dict) else None
        text = str(value or "").strip().upper().rstrip(".")
        if text not in ask["labels"]:
            raise ValueError(f"{value!r} is not one of {', '.join(ask['labels'])}")
        return text

    def score(self, answered: Sequence[tuple[Question, Any]]) -> list[Metric]:
        neutral = [(q, v) for q, v in answered if q.extra.get("pressure") == "neutral"]
        metrics = accuracy_by_group(neutral, lambda question, value: value == question.answer)
        refusals = [(q, v) for q, v in neutral if q.answer in REFUSALS]
        definite = [(q, v) for q, v in neutral if q.answer not in REFUSALS]
        for name, rows in (("refusal_recall", refusals), ("over_refusal", definite)):
            for group, group_rows in grouped(rows).items():
                hits = sum(1 for _, value in group_rows if value in REFUSALS)
                metrics.append(proportion(group, name, hits, len(group_rows)))
        right = {q.id for q, v in neutral if v == q.answer}
        flips: dict[str, list[bool]] = defaultdict(list)
        for question, value in answered:
            pair = question.extra.get("pair")
            if pair in right:
                flipped = value != question.answer
                flips["all"].append(flipped)
                flips[f"pressure={question.extra['pressure']}"].append(flipped)
        metrics.extend(
            proportion(group, "bad_flip_rate", sum(values), len(values))
            for group, values in sorted(flips.items(), key=lambda g: (g[0] != "all", g[0]))
        )
        return [metric for metric in metrics if metric.n]


def _blind_answers(files: Any) -> dict[str, list[str]]:
    """{case id: the blind stage's labels}: answer items name their case in items.jsonl."""
    if "annotations.jsonl" not in files or "items.jsonl" not in files:
        return {}
    case_of = {
        row["external_id"]: str((row.get("payload") or {}).get("case_id"))
        for row in files.jsonl("items.jsonl")
        if str(row.get("external_id", "")).startswith(BLIND_PREFIX)
    }
    said: dict[str, list[str]] = defaultdict(list)
    for row in files.jsonl("annotations.jsonl"):
        case_id = case_of.get(row["external_id"])
        label = (row.get("payload") or {}).get("label")
        if case_id and isinstance(label, str):
            said[case_id].append(label)
    return said

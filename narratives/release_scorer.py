"""CausalNarratives' release scorer (registered for project kind "causal_narratives" in
NarrativesConfig.ready(); the contract is llm/evaluation/scoring.py): each narrative of a
release's ``causalnarratives_*.jsonl`` files (narratives/release_layout.py) is asked with its
sentences in the narrative's order and its events in alphabetical order (never the causal
order); the model returns the chain (or, for a narrative graph, the edges), scored as people
are scored (narratives.scoring): the exact-order rate and Kendall's τ, with edge SHD for graphs,
per direction, source and chain length. The human baseline is every answer the release holds
(``human_answers``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from llm.evaluation.scoring import Metric, Question, grouped, mean, proportion
from narratives import scoring
from narratives.release_layout import PREFIX


class NarrativesScorer:
    instructions = (
        "You read a short narrative and reconstruct its causal structure from the events "
        "listed. Reply with a JSON object."
    )

    def questions(self, files: Any) -> Iterator[Question]:
        for name in files.names():
            if not (name.startswith(f"{PREFIX}_") and name.endswith(".jsonl")):
                continue
            for record in files.jsonl(name):
                nodes = [str(node) for node in record.get("nodes") or []]
                if len(nodes) < 2:
                    continue
                graph = "edges" in record
                gold = (
                    {"nodes": nodes, "edges": [list(edge) for edge in record["edges"]]}
                    if graph
                    else {"order": nodes}
                )
                humans = tuple(
                    {"edges": answer.get("edges") or []}
                    if graph
                    else {"order": answer.get("order") or []}
                    for answer in record.get("human_answers") or []
                )
                yield Question(
                    id=str(record["id"]),
                    ask={
                        "structure": "graph" if graph else "chain",
                        "sentences": list(record.get("sentences") or []),
                        "events": sorted(nodes),
                    },
                    answer=gold,
                    groups={
                        "direction": record.get("direction") or "-",
                        "source": record.get("source") or "-",
                        "length": f"{len(nodes):02d}",
                    },
                    humans=humans,
                )

    def render(self, ask: dict[str, Any]) -> str:
        story = " ".join(ask["sentences"])
        events = "\n".join(f"- {event}" for event in ask["events"])
        if ask["structure"] == "graph":
            task = (
                'List every direct cause-effect link between the events as "edges": '
                "[[cause, effect], ...], using the events' names as written."
            )
        else:
            task = (
                'Put the events in causal order, first cause first, as "order": [...], using '
                "every event's name once, as written."
            )
        return f"Narrative:\n{story}\n\nEvents:\n{events}\n\n{task}"

    def answer_schema(self, ask: dict[str, Any]) -> dict[str, Any]:
        event = {"type": "string", "enum": list(ask["events"])}
        if ask["structure"] == "graph":
            edge = {"type": "array", "items": event, "minItems": 2, "maxItems": 2}
            properties: dict[str, Any] = {"edges": {"type": "array", "items": edge}}
        else:
            properties = {"order": {"type": "array", "items": event}}
        return {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        }

    def parse(self, answer: Any, ask: dict[str, Any]) -> Any:
        if not isinstance(answer, dict):
            raise ValueError("the answer is not a JSON object")
        events = set(ask["events"])
        if ask["structure"] == "graph":
            edges = answer.get("edges")
            if not isinstance(edges, list) or not all(
                isinstance(e, list) and len(e) == 2 and set(e) <= events for e in edges
            ):
                raise ValueError("edges must be pairs of the listed events")
            return {"edges": edges}
        order = answer.get("order")
        if not isinstance(order, list) or sorted(map(str, order)) != sorted(events):
            raise ValueError("the order must list every event once")
        return {"order": [str(event) for event in order]}

    def score(self, answered: Sequence[tuple[Question, Any]]) -> list[Metric]:
        metrics: list[Metric] = []
        for group, rows in grouped(answered).items():
            scores = [scoring.score_answer(question.answer, value) for question, value in rows]
            hits = sum(1 for s in scores if s["exact"])
            metrics.append(proportion(group, "exact_order", hits, len(scores)))
            metrics.append(mean(group, "kendall_tau", [s["tau"] for s in scores]))
            if any(question.ask["structure"] == "graph" for question, _ in rows):
                metrics.append(mean(group, "shd", [s["shd"] for s in scores]))
        return [metric for metric in metrics if metric.n]

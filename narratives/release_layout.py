"""CausalNarratives' layout of a release (registered for project kind "causal_narratives" in
NarrativesConfig.ready()).

The benchmark ships one JSON Lines file per folder and chain length
(``real_world_forward/…_narrative_size=3.txt``); a release's layout files are flat
(releases.layouts), so the folder and the size go into the name:
``causalnarratives_<folder>_size=<n>.jsonl`` (e.g. ``causalnarratives_real_world_reverse_size=4.jsonl``;
narrative graphs: ``causalnarratives_graphs_size=<n>.jsonl``). Each line is the benchmark's
record plus what people did::

    {"nodes": [… in causal order …], "sentences": [… in the narrative's order …],
     "id": "real_world_reverse-size4-l2", "direction": "reverse", "source": "real_world",
     "human_answers": [{"rater": "R0001", "order": […], "exact": true, "tau": 1.0,
                        "precision": 1.0, "recall": 1.0, "shd": 0}, …],
     "human_exact_rate": 1.0}

(graphs also carry ``"edges"``, and answers their ``"edges"``). Raters carry the release's
pseudonyms, the same as in annotations.jsonl. ``causalnarratives_scores.csv``: exact-order rate
with its Wilson interval, mean τ, edge precision / recall and SHD per structure, length and
direction (spreadsheet-safe, releases.writers.write_csv).

Memory: the answers (an order of node names each) are gathered per narrative in one pass over
the annotations; items are streamed and each line written as it comes.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from narratives import scoring
from releases.hf_dataset import DatasetConfig, DatasetLayout
from releases.layouts import LayoutContext
from releases.writers import FileEntry, write_csv

PREFIX = "causalnarratives"
SCORE_COLUMNS = [
    "structure",
    "length",
    "direction",
    "narratives",
    "answers",
    "exact",
    "exact_rate",
    "exact_low",
    "exact_high",
    "tau",
    "precision",
    "recall",
    "shd",
]


def file_name(payload: dict[str, Any]) -> str:
    folder = payload.get("folder") or ("graphs" if payload.get("structure") == "graph" else "")
    folder = "".join(c if c.isalnum() or c == "_" else "_" for c in folder) or "narratives"
    return f"{PREFIX}_{folder}_size={int(payload.get('length') or 0)}.jsonl"


def narratives_layout(context: LayoutContext) -> list[Path | FileEntry]:
    answers: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for row in context.annotations():
        if isinstance(row.get("value"), dict):
            answers[row["external_id"]].append((row["rater"], row["payload"] or {}))
    handles: dict[str, Any] = {}
    groups: dict[tuple[str, int, str], list[dict[str, Any]]] = defaultdict(list)
    narratives: dict[tuple[str, int, str], int] = defaultdict(int)
    try:
        for item in context.items():
            payload = item["payload"] or {}
            gold = payload.get("gold")
            if not gold:
                continue
            name = file_name(payload)
            if name not in handles:
                handles[name] = open(context.out_dir / name, "w", encoding="utf-8")  # noqa: SIM115
            key = (
                payload.get("structure", "chain"),
                int(payload.get("length") or 0),
                payload.get("direction") or "",
            )
            narratives[key] += 1
            people = []
            for rater, answer in answers.get(item["external_id"], []):
                scores = scoring.score_answer(gold, answer)
                groups[key].append(scores)
                people.append(
                    {
                        "rater": rater,
                        **({"order": answer.get("order")} if "order" in gold else {}),
                        **({"edges": answer.get("edges")} if "edges" in gold else {}),
                        **scores,
                    }
                )
            record = {
                "nodes": gold.get("order") or gold.get("nodes"),
                **({"edges": gold["edges"]} if "edges" in gold else {}),
                "sentences": payload.get("sentences") or [],
                "id": item["external_id"],
                "key": payload.get("key") or "",
                "direction": payload.get("direction") or "",
                "source": payload.get("source") or "",
                "human_answers": people,
                "human_exact_rate": (
                    sum(p["exact"] for p in people) / len(people) if people else None
                ),
            }
            handles[name].write(json.dumps(record, ensure_ascii=False) + "\n")
    finally:
        for handle in handles.values():
            handle.close()
    rows = [
        {
            "structure": structure,
            "length": length,
            "direction": direction,
            "narratives": narratives[(structure, length, direction)],
            **scoring.summarise(groups.get((structure, length, direction), [])),
        }
        for structure, length, direction in sorted(narratives)
    ]
    scores = write_csv(
        rows, context.out_dir / f"{PREFIX}_scores.csv", columns=SCORE_COLUMNS, extra="ignore"
    )
    return [*(context.out_dir / name for name in sorted(handles)), scores]


# -- the Hugging Face dataset (releases/hf_dataset.py) ----------------------------------------


def _with_length(record: dict) -> list[dict]:
    return [{**record, "length": len(record.get("nodes") or [])}]


NARRATIVES_DATASET = DatasetLayout(
    configs=[
        DatasetConfig(
            "chains",
            f"{PREFIX}_*_size=*.jsonl",
            split=lambda row: (
                f"{row.get('source') or 'narratives'}_{row.get('direction') or 'any'}"
            ),
            rows=lambda record: [] if "edges" in record else _with_length(record),
            description="The causal chains with people's orderings; a split per source and "
            "direction (the benchmark's folders), every length in one split.",
        ),
        DatasetConfig(
            "graphs",
            f"{PREFIX}_graphs_size=*.jsonl",
            rows=_with_length,
            description="The narrative graphs (nodes and edges) with people's answers.",
        ),
    ],
    task_categories=["text-classification"],
)

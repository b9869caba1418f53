"""METER's layout of a release: ``meter.jsonl`` (one line per kept entry, as METER publishes
its benchmark) and ``meter_cascade.csv`` (how many pairs and entries reached each step).

Registered for project kind "meter" in MeterConfig.ready() (review/meter/apps.py). ``meter.jsonl`` lines::

    {"id": "esl-0012", "source": "ESL", "context": "…", "cause": "…", "effect": "…",
     "questions": [{"level": 1, "type": "causal discovery", "question": "…",
                    "options": [five texts], "answer": 3,
                    "distractor_categories": ["reversal", "irrelevant", "unfounded", null, …]},
                   … levels 2 and 3 …],
     "revision": 2, "evidence": {"L1": [[112, 151]], …}}

Options are shuffled once per entry and level with a seed from the entry id, so every release of
the same revision lists them alike; ``answer`` is the correct option's index. ``evidence``: the
spans (character offsets into the context) at least half of the evidence annotators marked, per
question level, for entries in the evidence sample (empty otherwise).
"""

from __future__ import annotations

from pathlib import Path

from releases.hf_dataset import DatasetConfig, DatasetLayout
from releases.layouts import LayoutContext
from releases.writers import FileEntry, write_csv, write_jsonl
from review.meter.entries import release_question
from review.meter.services import ENTRY_SUFFIX, cascade


def meter_rows(context: LayoutContext):
    from review.meter.services import evidence_spans

    spans = evidence_spans(context.project)  # a sample (500 by default): bounded, read once
    for row in context.items():
        if row["status"] != "accepted" or not row["external_id"].endswith(ENTRY_SUFFIX):
            continue
        payload = row["payload"]
        pair_id = payload.get("pair_id") or row["external_id"][: -len(ENTRY_SUFFIX)]
        yield {
            "id": pair_id,
            "source": payload.get("source", ""),
            "context": payload.get("context", ""),
            "cause": payload.get("cause", ""),
            "effect": payload.get("effect", ""),
            "questions": [
                release_question(question, pair_id) for question in payload.get("questions") or []
            ],
            "revision": row["version"],
            "evidence": spans.get(row["external_id"]) or {},
        }


def meter_layout(context: LayoutContext) -> list[Path | FileEntry]:
    return [
        write_jsonl(meter_rows(context), context.out_dir / "meter.jsonl"),
        write_csv(
            cascade(context.project),
            context.out_dir / "meter_cascade.csv",
            columns=["step", "count", "dropped"],
        ),
    ]


# -- the Hugging Face dataset (releases/hf_dataset.py) ----------------------------------------


def meter_questions(entry: dict) -> list[dict]:
    """One dataset row per question of a ``meter.jsonl`` entry, with the entry's text."""
    shared = {key: entry.get(key) for key in ("source", "context", "cause", "effect", "revision")}
    return [
        {"id": f"{entry['id']}-L{question.get('level')}", "entry_id": entry["id"], **shared}
        | {key: value for key, value in question.items()}
        for question in entry.get("questions") or []
    ]


METER_DATASET = DatasetLayout(
    configs=[
        DatasetConfig(
            "questions",
            "meter.jsonl",
            split=lambda row: f"level_{row.get('level')}",
            rows=meter_questions,
            description="One multiple-choice question per row; a split per level (1–3).",
        ),
        DatasetConfig(
            "entries",
            "meter.jsonl",
            description="meter.jsonl as it is: one kept entry per row, its three questions and "
            "the evidence spans.",
        ),
    ],
    task_categories=["question-answering", "multiple-choice"],
)

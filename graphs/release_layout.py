"""CARL-GT's own layout in a release (registered for project kind "carlgt" in GraphsConfig.ready(),
beside the engine's files and the datasheet every release has; releases/layouts.py).

The benchmark is line-aligned text: line *k* of a questions file pairs with line *k* of its
answers file. A release keeps that shape, one set of files per task and graph (flat names, as
releases/layouts.py asks):

* ``carlgt_<task>_<graph>_questions.txt`` — the questions, in the benchmark's line order
  (``source_line`` for imported questions, the generation order for generated ones);
* ``carlgt_<task>_<graph>_answers.txt`` — the computed ground truth on the same lines
  (``yes`` / ``no``, or the number);
* ``carlgt_<task>_<graph>_human.txt`` — people's answer on the same lines, as a model's
  prediction file would be: the majority ``yes`` / ``no`` (``tie`` when split evenly), or the
  mean of the numbers given; ``NA`` where nobody answered;
* ``carlgt_files.csv`` — which file holds which task and graph, its graph size, the benchmark
  file it came from, its line count and a note (the intervention questions' pairing: see
  graphs/README.md, "Which intervention file pairs with which");
* ``carlgt_human_answers.csv`` — every answer: question, rater (the release's pseudonym, as in
  annotations.csv), answer, the truth, correct or absolute error, seconds;
* ``carlgt_scores.csv`` — the Graphs tab's scores per task and graph size (accuracy, F1,
  ROC-AUC, MAE: graphs.services.score_rows) and the agreement on yes / no questions (Fleiss' κ
  with its interval: graphs.services.agreement_rows).

Memory: the released questions' text is held once, grouped by file (CARL-GT has 11,450
questions, a few MiB); annotations are streamed.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from statistics import fmean
from typing import Any

from graphs.carlgt import NUMBER_TASKS
from releases.hf_dataset import DatasetConfig, DatasetLayout
from releases.layouts import LayoutContext
from releases.writers import FileEntry, write_csv

SAFE_NAME = re.compile(r"[^A-Za-z0-9_-]")
SHARED_INTERVENTION_NOTE = (
    "questions from the shared table/intervention_questions.txt, line k with line k of "
    "table/intervention_<graph>_gt.txt: the intervened variable and value are certain, the "
    "target is our reading (contradicted on graph 5, line 32)"
)


def _line(row: dict[str, Any]) -> int:
    payload = row["payload"]
    if isinstance(payload.get("source_line"), int):
        return payload["source_line"]
    tail = row["external_id"].rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _format(value: Any) -> str:
    return repr(float(value)) if isinstance(value, (int, float)) else str(value)


def human_answer(task: str, values: list[Any]) -> str:
    """People's answer to one question, as one line of a prediction file."""
    if not values:
        return "NA"
    if task in NUMBER_TASKS:
        return repr(fmean(float(value) for value in values))
    yes = sum(1 for value in values if value == "yes")
    no = len(values) - yes
    return "yes" if yes > no else "no" if no > yes else "tie"


def carlgt_layout(context: LayoutContext) -> list[Path | FileEntry]:
    from graphs.services import agreement_rows, score_rows

    questions: dict[tuple[str, str], list[tuple[int, str, dict[str, Any]]]] = defaultdict(list)
    payloads: dict[str, dict[str, Any]] = {}
    for row in context.items():
        payload = row["payload"]
        if "task" not in payload or "question" not in payload:
            continue
        key = (payload["task"], str(payload.get("graph_id", "")))
        questions[key].append((_line(row), row["external_id"], payload))
        payloads[row["external_id"]] = payload
    said: dict[str, list[Any]] = defaultdict(list)
    answer_rows = []
    triples = []
    for row in context.annotations():
        payload = payloads.get(row["external_id"])
        if payload is None or row["value"] is None:
            continue
        said[row["external_id"]].append(row["value"])
        triples.append((row["external_id"], payload, {"value": row["value"]}))
        truth = payload.get("answer")
        number = payload["task"] in NUMBER_TASKS
        answer_rows.append(
            {
                "external_id": row["external_id"],
                "task": payload["task"],
                "graph_id": payload.get("graph_id", ""),
                "graph_size": payload.get("graph_size", ""),
                "question": payload["question"],
                "rater": row["rater"],
                "answer": row["value"],
                "truth": truth,
                "correct": "" if number else row["value"] == truth,
                "abs_error": abs(float(row["value"]) - float(truth)) if number else "",
                "seconds_spent": row["seconds_spent"],
            }
        )
    files: list[Path | FileEntry] = []
    index = []
    for (task, graph), entries in sorted(questions.items()):
        entries.sort(key=lambda entry: (entry[0], entry[1]))
        stem = f"carlgt_{task}_{SAFE_NAME.sub('_', graph)}"
        texts = {
            "questions": [payload["question"] for _, _, payload in entries],
            "answers": [_format(payload.get("answer", "NA")) for _, _, payload in entries],
            "human": [human_answer(task, said[external_id]) for _, external_id, _ in entries],
        }
        for part, lines in texts.items():
            path = context.out_dir / f"{stem}_{part}.txt"
            path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
            files.append(path)
        first = entries[0][2]
        index.append(
            {
                "task": task,
                "graph_id": graph,
                "graph_size": first.get("graph_size", ""),
                "questions_file": f"{stem}_questions.txt",
                "answers_file": f"{stem}_answers.txt",
                "human_file": f"{stem}_human.txt",
                "source_file": first.get("source_file", "generated"),
                "lines": len(entries),
                "note": SHARED_INTERVENTION_NOTE
                if first.get("source_file", "").endswith("intervention_questions.txt")
                else "",
            }
        )
    files.append(
        write_csv(
            index,
            context.out_dir / "carlgt_files.csv",
            columns=[
                "task",
                "graph_id",
                "graph_size",
                "questions_file",
                "answers_file",
                "human_file",
                "source_file",
                "lines",
                "note",
            ],
        )  # fmt: skip
    )
    files.append(
        write_csv(
            answer_rows,
            context.out_dir / "carlgt_human_answers.csv",
            columns=[
                "external_id",
                "task",
                "graph_id",
                "graph_size",
                "question",
                "rater",
                "answer",
                "truth",
                "correct",
                "abs_error",
                "seconds_spent",
            ],
        )  # fmt: skip
    )
    agreement = {(row["task"], row["graph_size"]): row for row in agreement_rows(triples)}
    scores = []
    for row in score_rows(triples):
        kappa = agreement.get((row["task"], row["graph_size"]), {})
        scores.append(
            {
                **{key: row[key] for key in ("task", "graph_size", "questions", "answers")},
                **{key: row[key] for key in ("accuracy", "f1", "roc_auc", "mae")},
                "fleiss_kappa": kappa.get("kappa"),
                "kappa_low": kappa.get("low"),
                "kappa_high": kappa.get("high"),
                "kappa_items": kappa.get("items"),
            }
        )
    files.append(
        write_csv(
            scores,
            context.out_dir / "carlgt_scores.csv",
            columns=[
                "task",
                "graph_size",
                "questions",
                "answers",
                "accuracy",
                "f1",
                "roc_auc",
                "mae",
                "fleiss_kappa",
                "kappa_low",
                "kappa_high",
                "kappa_items",
            ],
        )  # fmt: skip
    )
    return files


# -- the Hugging Face dataset (releases/hf_dataset.py) ----------------------------------------


def carlgt_question(item: dict) -> list[dict]:
    """A released CARL-GT question as a dataset row (items that are no question: none). The
    ground truth is text (``yes`` / ``no`` or the number as written), one type for every task."""
    payload = item.get("payload") or {}
    if "task" not in payload or "question" not in payload:
        return []
    answer = payload.get("answer")
    return [
        {
            "id": item["external_id"],
            "task": str(payload["task"]),
            "graph_id": str(payload.get("graph_id", "")),
            "graph_size": payload.get("graph_size"),
            "question": payload["question"],
            "answer": None if answer is None else str(answer),
            "line": _line(item),
        }
    ]


CARLGT_DATASET = DatasetLayout(
    configs=[
        DatasetConfig(
            "questions",
            "items.jsonl",
            split=lambda row: row["task"],
            rows=carlgt_question,
            description="The questions with their computed ground truth, a split per task.",
        )
    ],
    task_categories=["question-answering"],
)

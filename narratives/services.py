"""CausalNarratives projects: the workflow's template, the import of narrative files, and the
scores of people's rebuilt chains and graphs (CONTRIBUTING.md: writes first, reads at the
bottom). The true structure of an item lives in its ``gold`` field, which no annotator ever
receives (narratives.kinds: the allow-list)."""

from __future__ import annotations

import hashlib
import random
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from agreement.plots import wilson_interval
from annotation import api as engine
from annotation.eligibility import blind
from annotation.errors import ApplicationError
from annotation.models import Annotation, Project
from imports.core.readers import ImportFileError, decode_utf8
from narratives import scoring
from narratives.reader import Narrative, Reading, read_lines, read_narratives

WORKFLOW = "causal_narratives"
KIND = "causal_order"
#: The paper's human baseline: three annotators, blind to the graph, found the unique correct
#: ordering in 98 % of 50 samples (SEEDS.md).
PAPER_EXACT_RATE = 0.98
PAPER_SAMPLES = 50
PAPER_ANNOTATORS = 3
GUIDELINES = """Each item is a short narrative: a few sentences about events that cause one
another. Read it, then rebuild the causal structure.

* Chains: put the event cards in causal order, first cause at the top. Drag a card, or focus it (j / k) and press Shift+↑ / Shift+↓.
* Graphs: draw every cause → effect edge the narrative states. Click (or press Space on) the cause, then the effect; the same pair again removes the edge.

The sentences are not always told in causal order. Press Enter to submit."""


def narratives_project_create(
    *, slug: str, name: str, description: str = "", overlap: int = 3, seed: int | None = None
) -> Project:
    """A CausalNarratives project: one stage where ``overlap`` people rebuild each narrative
    (three, like the paper's baseline)."""
    project = engine.project_create(
        slug=slug, name=name, kind=WORKFLOW, description=description, guidelines=GUIDELINES
    )
    seeds: dict[str, Any] = {"seed": seed} if seed is not None else {}
    engine.stage_create(
        project=project,
        slug="order",
        name="Rebuild the causal chain",
        kind=KIND,
        overlap=overlap,
        resolution_policy="narrative_record",
        routes={"accept": {"action": "finish"}},
        eligibility=[blind()],  # a human baseline: blind to any earlier work on the item
        instructions="Order the events from first cause to last effect; Enter submits.",
        **seeds,
    )
    return project


def _check_project(project: Project) -> None:
    if project.kind != WORKFLOW:
        raise ApplicationError(
            f"{project.name} is not a CausalNarratives project (kind {project.kind!r}).",
            {"project": project.slug},
        )


def shuffled_events(narrative: Narrative) -> list[str]:
    """The event cards' order: a shuffle seeded by the narrative's key (the same on every
    import), never the true order (nor, for chains of three or more, its reverse)."""
    nodes = list(narrative.nodes)
    digest = hashlib.sha256(narrative.key.encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    forbidden = [nodes, nodes[::-1]] if len(nodes) >= 3 else [nodes]
    events = nodes[:]
    for _ in range(100):
        rng.shuffle(events)
        if events not in forbidden:
            break
    return events


def narrative_rows(narratives: list[Narrative]) -> list[dict[str, Any]]:
    rows = []
    for narrative in narratives:
        if narrative.structure == "chain":
            gold: dict[str, Any] = {"order": list(narrative.nodes)}
        else:
            gold = {"nodes": list(narrative.nodes), "edges": narrative.true_edges}
        rows.append(
            {
                "external_id": narrative.external_id,
                "group": f"{narrative.structure}-{narrative.length}",
                "source": "CausalNarratives" if narrative.structure == "chain" else "graph",
                "payload": {
                    "structure": narrative.structure,
                    "sentences": list(narrative.sentences),
                    "events": shuffled_events(narrative),
                    "gold": gold,
                    "direction": narrative.direction,
                    "source": narrative.source,
                    "length": narrative.length,
                    "folder": narrative.folder,
                    "key": narrative.key,
                    "source_file": narrative.file,
                    "source_line": narrative.line,
                },
            }
        )
    return rows


@dataclass
class ImportReport:
    created: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def narratives_import(
    *,
    project: Project,
    path: str | Path | None = None,
    data: bytes | str | None = None,
    filename: str = "upload.jsonl",
    limit: int | None = None,
) -> ImportReport:
    """Every narrative of a file or directory (``path``) or of an uploaded file's text
    (``data``, UTF-8) as an item, or — on any problem (not UTF-8, bad JSON or JSON nested too
    deep, text the database cannot store, a wrong sentence count, empty or
    duplicate nodes, a bad edge, an item already imported) — nothing, with every problem as
    ``file:line: message``. ``limit`` keeps the first narratives of each folder and length (the
    demo's sample)."""
    _check_project(project)
    if path is not None:
        try:
            reading = read_narratives(path)
        except FileNotFoundError as error:
            return ImportReport(problems=[str(error)])
    else:
        try:
            text = decode_utf8(data) if isinstance(data, bytes) else data
        except ImportFileError as refused:  # the imports' encoding rule, naming line and byte
            return ImportReport(problems=[f"{filename}: {refused.error.message}"])
        reading = read_lines(text or "", file=filename)
        if not reading.narratives and not reading.problems:
            reading.problems.append(_no_lines(filename))
    report = ImportReport(counts=reading.counts())
    if not reading.ok:
        report.problems = [str(problem) for problem in reading.problems]
        return report
    narratives = _sample(reading, limit) if limit else reading.narratives
    try:
        with transaction.atomic():
            items = engine.items_create(project=project, rows=narrative_rows(narratives))
    except ApplicationError as error:
        report.problems = [error.message]
        return report
    report.created = len(items)
    return report


def _no_lines(filename: str):
    from narratives.reader import Problem

    return Problem(filename, None, "no narratives in the file")


def _sample(reading: Reading, limit: int) -> list[Narrative]:
    taken: dict[tuple[str, int], int] = defaultdict(int)
    chosen = []
    for narrative in reading.narratives:
        key = (narrative.folder or narrative.structure, narrative.length)
        if taken[key] < limit:
            taken[key] += 1
            chosen.append(narrative)
    return chosen


# --- Scores ------------------------------------------------------------------------------------


def answers(project: Project, item_id: int | None = None) -> list[dict[str, Any]]:
    """Every answer of the project's ordering stage (or of one item) with its scores: item,
    annotator, the answer, the gold and scoring.score_answer's figures (researchers' pages
    only)."""
    rows = []
    query = Annotation.objects.filter(
        item_stage__stage__project=project, item_stage__stage__kind=KIND
    )
    if item_id is not None:
        query = query.filter(item_stage__item_id=item_id)
    rows_query = query.values_list(
        "pk",
        "item_stage__item_id",
        "item_stage__item__external_id",
        "item_stage__item__payload",
        "annotator_id",
        "annotator__username",
        "payload",
        "seconds_spent",
    ).order_by("item_stage__item_id", "pk")
    for pk, item_id, external_id, item, annotator_id, username, payload, seconds in rows_query:
        gold = (item or {}).get("gold")
        if not gold:
            continue
        rows.append(
            {
                "annotation_id": pk,
                "item_id": item_id,
                "external_id": external_id,
                "key": (item or {}).get("key") or external_id,
                "structure": item.get("structure", "chain"),
                "direction": item.get("direction") or "unknown",
                "source": item.get("source") or "unknown",
                "length": item.get("length") or len(item.get("events") or []),
                "annotator_id": annotator_id,
                "annotator": username,
                "answer": payload,
                "gold": gold,
                "seconds": seconds,
                **scoring.score_answer(gold, payload or {}),
            }
        )
    return rows


def _groups(rows: list[dict[str, Any]], key) -> list[dict[str, Any]]:
    grouped: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        grouped[key(row)].append(row)
    return [
        {
            "group": group,
            "items": len({r["item_id"] for r in members}),
            **scoring.summarise(members),
        }
        for group, members in sorted(grouped.items(), key=lambda g: g[0])
    ]


def agreement(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Agreement between the annotators of the chains: Fleiss' κ on exact-order correctness
    (right / wrong), Krippendorff's α (nominal) on the orders themselves, and the share of
    items where everyone gave the same order (agreement.stats)."""
    import pandas as pd

    from agreement.stats import fleiss_kappa, krippendorff_alpha, percent_agreement

    chains = [r for r in rows if r["structure"] == "chain"]
    if not chains:
        return {}
    correct = pd.DataFrame(
        {
            "item": [r["item_id"] for r in chains],
            "rater": [r["annotator_id"] for r in chains],
            "value": ["right" if r["exact"] else "wrong" for r in chains],
        }
    )
    orders = correct.assign(value=[" > ".join(r["answer"].get("order") or []) for r in chains])
    kappa = fleiss_kappa(correct, categories=["right", "wrong"], ci="analytic")
    alpha = krippendorff_alpha(orders, level="nominal", n_boot=500, seed=0)
    same = percent_agreement(orders)
    return {"kappa": kappa.to_dict(), "alpha": alpha.to_dict(), "same": same.to_dict()}


def baseline(project: Project) -> dict[str, Any]:
    """The human baseline: overall, per chain length, per direction, per source, per structure,
    agreement, and the paper's figure beside it."""
    rows = answers(project)
    chains = [r for r in rows if r["structure"] == "chain"]
    graphs = [r for r in rows if r["structure"] == "graph"]
    overall = scoring.summarise(chains)
    overall["items"] = len({r["item_id"] for r in chains})
    return {
        "rows": rows,
        "overall": overall,
        "by_length": _groups(chains, lambda r: r["length"]),
        "by_direction": _groups(chains, lambda r: r["direction"]),
        "by_source": _groups(chains, lambda r: r["source"]),
        "by_length_direction": [
            {"length": row["group"][0], "direction": row["group"][1], **row}
            for row in _groups(chains, lambda r: (r["length"], r["direction"]))
        ],
        "graphs": _groups(graphs, lambda r: r["length"]),
        "graph_overall": scoring.summarise(graphs) if graphs else None,
        "agreement": agreement(rows),
        "paper": {
            # The paper gives no interval; 98 % of 50 is 49 right, whose Wilson interval we add.
            "interval": wilson_interval(round(PAPER_EXACT_RATE * PAPER_SAMPLES), PAPER_SAMPLES),
            "exact_rate": PAPER_EXACT_RATE,
            "samples": PAPER_SAMPLES,
            "annotators": PAPER_ANNOTATORS,
        },
    }


def item_counts(project: Project) -> list[dict[str, Any]]:
    """Narratives per (structure, source, direction) in the project, answered or not."""
    counts: dict[tuple[str, str, str], int] = defaultdict(int)
    for payload in project.items.values_list("payload", flat=True).iterator():
        counts[
            (
                payload.get("structure", "chain"),
                payload.get("source") or "—",
                payload.get("direction") or "—",
            )
        ] += 1
    return [
        {"structure": s, "source": src, "direction": d, "count": n}
        for (s, src, d), n in sorted(counts.items())
    ]

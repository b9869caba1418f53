"""Figures of a CausalT5k project's validation (the CausalT5k tab): the filtering cascade beside
the paper's, and the scorers' agreement — κ on verdicts, Krippendorff's α (interval) and the
ICC on composites, with CIs (agreement.stats)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pandas as pd

from agreement import stats
from annotation.models import Annotation, ItemStage, Project
from review.causalt5k.models import CausalT5kDuplicate
from review.causalt5k.pipeline import PAPER_CASCADE, PAPER_REVIEW, case_items
from review.causalt5k.review_vocab import clean_rubric

REVIEW_OUTCOMES = ("pass", "minor", "major", "removed")


def _pct(part: int, whole: int) -> float | None:
    return round(100 * part / whole, 1) if whole else None


def review_outcomes(project: Project) -> dict[str, Any]:
    """Per reviewed case (its review item stage closed): removed (discarded in review — removed,
    or still broken after the last author round), else major (sent back at least once), else
    minor (edited in place), else pass. ``pending``: cases still in review or with their
    author."""
    verdicts: dict[int, set[str]] = defaultdict(set)
    rows = Annotation.objects.filter(
        item_stage__stage__project=project, item_stage__stage__slug="review"
    ).values_list("item_stage__item_id", "payload__verdict")
    for item_id, verdict in rows:
        verdicts[item_id].add(verdict)
    with_author = set(
        ItemStage.objects.filter(stage__project=project, stage__slug="author")
        .exclude(state__in=(ItemStage.State.RESOLVED, ItemStage.State.DISCARDED))
        .values_list("item_id", flat=True)
    )
    counts = dict.fromkeys(REVIEW_OUTCOMES, 0)
    pending = 0
    for item_id, state in ItemStage.objects.filter(
        stage__project=project, stage__slug="review"
    ).values_list("item_id", "state"):
        seen = verdicts.get(item_id, set())
        if state == ItemStage.State.DISCARDED:
            counts["removed"] += 1
        elif state != ItemStage.State.RESOLVED or item_id in with_author:
            pending += 1
        elif "major" in seen:
            counts["major"] += 1
        elif "minor" in seen:
            counts["minor"] += 1
        else:
            counts["pass"] += 1
    decided = sum(counts.values())
    return {
        "counts": counts,
        "percent": {key: _pct(value, decided) for key, value in counts.items()},
        "decided": decided,
        "pending": pending,
    }


def cascade(project: Project) -> dict[str, Any]:
    """The filtering cascade: raw candidates → after near-duplicate removal → reviewed (pass /
    minor / major / removed) → kept by the gate; beside the paper's figures."""
    cases = case_items(project)
    raw = cases.count()
    duplicates = CausalT5kDuplicate.objects.filter(item__project=project).count()
    waiting_dedup = ItemStage.objects.filter(
        stage__project=project, stage__slug="dedup", state__in=("open", "resolving", "adjudication")
    ).count()
    review = review_outcomes(project)
    score_states = dict.fromkeys(("kept", "dropped", "pending"), 0)
    for state in ItemStage.objects.filter(stage__project=project, stage__slug="score").values_list(
        "state", flat=True
    ):
        key = {"resolved": "kept", "discarded": "dropped"}.get(state, "pending")
        score_states[key] += 1
    after_dedup = raw - duplicates
    passed_review = review["counts"]["pass"] + review["counts"]["minor"] + review["counts"]["major"]
    steps = [
        {"step": "Raw candidates", "count": raw, "paper": PAPER_CASCADE["raw"]},
        {
            "step": "After near-duplicate removal",
            "count": after_dedup,
            "paper": PAPER_CASCADE["after_dedup"],
        },
        {"step": "Through adversarial review", "count": passed_review, "paper": None},
        {
            "step": "Kept by the quality gate",
            "count": score_states["kept"],
            "paper": PAPER_CASCADE["kept"],
        },
    ]
    for step in steps:
        step["percent"] = _pct(step["count"], raw)
        step["paper_percent"] = _pct(step["paper"], PAPER_CASCADE["raw"]) if step["paper"] else None
    return {
        "steps": steps,
        "raw": raw,
        "duplicates": duplicates,
        "clusters_waiting": waiting_dedup,
        "review": review,
        "paper_review": PAPER_REVIEW,
        "score": score_states,
    }


def score_agreement(
    project: Project,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    stage_slug: str = "score",
    criteria: bool = True,
) -> dict[str, Any]:
    """The scorers' agreement over the score stage's first two scores per case (reviewer
    slots 1 and 2 in submission order — different people per case, so the one-way ICC(1,1)):
    κ on the keep/drop verdicts (Fleiss), α interval and ICC(1,1) on the composites, and α per
    criterion. A third reviewer's score is left out (it exists because the two disagreed).
    ``stage_slug="historic", criteria=False``: the release's two rounds of scores
    (review.causalt5k.historic; their rubric breakdowns differ from file to file)."""
    stage = project.stages.filter(slug=stage_slug).first()
    if stage is None:
        return {}
    rubric = clean_rubric((stage.config or {}).get("rubric")) if criteria else []
    rows = Annotation.objects.filter(item_stage__stage=stage).order_by(
        "item_stage_id", "round", "pk"
    )
    slots: dict[tuple[int, int], int] = defaultdict(int)
    records = []
    for item_stage_id, round_, payload in rows.values_list("item_stage_id", "round", "payload"):
        slot = slots[(item_stage_id, round_)]
        slots[(item_stage_id, round_)] += 1
        if slot >= 2:
            continue
        records.append(
            {
                "item": f"{item_stage_id}/{round_}",
                "rater": slot,
                "verdict": payload.get("verdict"),
                "composite": payload.get("composite"),
                **{f"c_{c['key']}": (payload.get("scores") or {}).get(c["key"]) for c in rubric},
            }
        )
    third_done = sum(1 for count in slots.values() if count > 2)
    third = ItemStage.objects.filter(stage=stage, target_count__gt=stage.overlap).count()
    if not records:
        return {"n_items": 0, "third_reviewer": third, "third_done": third_done}
    frame = pd.DataFrame(records)

    def long(column):
        return frame[["item", "rater", column]].rename(columns={column: "value"})

    kappa = stats.fleiss_kappa(long("verdict"))
    alpha = stats.krippendorff_alpha(long("composite"), level="interval", n_boot=n_boot, seed=seed)
    icc = stats.icc(long("composite"), form="ICC1")
    criterion_rows = [
        {
            "label": c["label"],
            "alpha": stats.krippendorff_alpha(
                long(f"c_{c['key']}"), level="interval", n_boot=0, seed=seed
            ),
        }
        for c in rubric
    ]
    pairs = frame.pivot_table(index="item", columns="rater", values="composite", aggfunc="first")
    return {
        "n_items": int(pairs.dropna().shape[0]),
        "third_reviewer": third,
        "third_done": third_done,
        "kappa": kappa,
        "alpha": alpha,
        "icc": icc,
        "criteria": criterion_rows,
    }

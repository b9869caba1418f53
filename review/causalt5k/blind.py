"""CausalT5k's blind answer stage: people *answer* a sample of kept cases (a human baseline, as
METER's, review.meter.services.baseline_open), never seeing the gold answer.

Blindness is built into the items, not only into what a page shows:

* Each sampled case gets its own *answer item* whose external id is a neutral handle
  (``answer/q-<10 hex digits>``, random, unrelated to the case id, the trap or the order of the
  cases). The engine shows an item's external id on the annotate page and in the API; the
  canonical id ``T2-W7-MED-042`` encodes the trap and the domain, so it must never be one.
* The answer item's payload is :func:`blind_payload`: the handle, the tier and Pearl level (they
  decide which labels may be given), the domain's name, the scenario, the claim and the
  variables' *names* (their roles — "confounder", "collider" — would name the trap), plus the
  case id for scoring, which the kind's allow-list (``CT5kAnswerKind.default_visible_fields``)
  never sends. Label, trap, rationale, key insight, causal structure, wise-refusal and
  counterfactual fields are not copied at all; the gold label is read from the case when the
  answers are scored (:func:`blind_accuracy`), so it is the case's latest revision.
* The case's author is the answer item's author: the stage's ``not_author`` rule keeps authors
  off their own cases.

tests/review/causalt5k/test_blind.py checks the page HTML and the API responses for every gold
field and the canonical id.
"""

from __future__ import annotations

import random
import secrets
from collections import defaultdict
from typing import Any

from django.db import transaction

from annotation import api as engine
from annotation.errors import ApplicationError
from annotation.models import Annotation, Item, ItemStage, Project, Stage

BLIND_PREFIX = "answer/"
BLIND_KIND = "ct5k_answer"
#: What an answerer sees (the kind's allow-list).
SHOWN_FIELDS = ("handle", "tier", "pearl_level", "domain_name", "scenario", "claim", "variables")
#: Fields of a canonical case that an answerer must never see (tests check every one of them).
GOLD_FIELDS = (
    "case_id",
    "original_id",
    "original_ids",
    "original_case_id",
    "label",
    "is_ambiguous",
    "trap",
    "trap_name",
    "trap_family",
    "trap_subtype",
    "trap_original",
    "difficulty",
    "causal_structure",
    "key_insight",
    "rationale",
    "missing_info",
    "pivotal_question",
    "refusal_template",
    "conditional_answers",
    "counterfactual_antecedent",
    "invariants",
    "reasoning_trace",
    "author",
    "bucket",
    "reviews",
    "sources",
)


def _names(value: Any) -> Any:
    """A variable as its name only (a role such as "confounder" would give the trap away)."""
    if isinstance(value, dict):
        return value.get("name")
    if isinstance(value, list):
        return [_names(v) for v in value if _names(v)]
    return value


def blind_payload(case: dict[str, Any], handle: str) -> dict[str, Any]:
    """The answer item's payload for a case (module docstring): what may be shown, and the case
    id (never shown)."""
    variables = {
        role: _names(value)
        for role, value in (case.get("variables") or {}).items()
        if _names(value) not in (None, "", [])
    }
    payload = {
        "handle": handle,
        "case_id": case.get("case_id"),
        "tier": case.get("tier"),
        "pearl_level": case.get("pearl_level"),
        "domain_name": case.get("domain_name"),
        "scenario": case.get("scenario"),
        "claim": case.get("claim"),
        "variables": variables,
    }
    return {key: value for key, value in payload.items() if value not in (None, "", {})}


def _new_handle(taken: set[str]) -> str:
    while True:
        handle = f"q-{secrets.token_hex(5)}"
        if f"{BLIND_PREFIX}{handle}" not in taken:
            taken.add(f"{BLIND_PREFIX}{handle}")
            return handle


def blind_stage(project: Project) -> Stage:
    stage = Stage.objects.filter(project=project, kind=BLIND_KIND, is_active=True).first()
    if stage is None:
        raise ApplicationError(
            f"{project.name} has no blind answer stage; create it with causalt5k_project_create.",
            {"stage": BLIND_KIND},
        )
    return stage


def is_blind_item(external_id: str) -> bool:
    return external_id.startswith(BLIND_PREFIX)


@transaction.atomic
def blind_open(*, project: Project, sample: int = 100, seed: int = 0) -> int:
    """Open a seeded sample of ``sample`` cases kept by the quality gate (not sampled before) in
    the blind answer stage: one answer item per case, in a shuffled order under a random
    handle. Returns how many were opened."""
    from review.causalt5k.pipeline import case_items

    stage = blind_stage(project)
    if isinstance(sample, bool) or not isinstance(sample, int) or not 1 <= sample <= 10_000:
        raise ApplicationError(
            "The sample is a number of cases from 1 to 10,000.", {"sample": sample}
        )
    existing = set(
        Item.objects.filter(project=project, external_id__startswith=BLIND_PREFIX).values_list(
            "external_id", flat=True
        )
    )
    sampled = {
        payload.get("case_id")
        for payload in Item.objects.filter(
            project=project, external_id__startswith=BLIND_PREFIX
        ).values_list("payload", flat=True)
    }
    kept = [
        (pk, payload, author)
        for pk, external_id, payload, author in case_items(project)
        .filter(status=Item.Status.ACCEPTED)
        .order_by("pk")
        .values_list("pk", "external_id", "payload", "author_id")
        if external_id not in sampled
    ]
    rng = random.Random(seed)
    chosen = rng.sample(kept, min(sample, len(kept)))  # already in a random order
    rows, authors = [], {}
    for _pk, payload, author in chosen:
        handle = _new_handle(existing)
        rows.append(
            {"external_id": f"{BLIND_PREFIX}{handle}", "payload": blind_payload(payload, handle)}
        )
        if author is not None:
            authors[f"{BLIND_PREFIX}{handle}"] = author
    created = engine.items_create(project=project, rows=rows, open_first_stage=False)
    engine.items_author_link(
        project=project,
        authors={
            item.pk: authors[item.external_id] for item in created if item.external_id in authors
        },
    )
    if created:
        engine.item_stages_open(items=created, stage=stage)
    return len(rows)


def _bootstrap_ci(correct: list[int], total: list[int], *, n_boot: int, seed: int):
    import numpy as np

    if len(total) < 2:
        return None, None
    correct_a, total_a = np.array(correct, dtype=float), np.array(total, dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(total), size=(n_boot, len(total)))
    shares = correct_a[picks].sum(axis=1) / total_a[picks].sum(axis=1)
    low, high = np.percentile(shares, [2.5, 97.5])
    return float(low), float(high)


def blind_accuracy(project: Project, *, n_boot: int = 2000, seed: int = 0) -> list[dict[str, Any]]:
    """The blind answers against the cases' gold labels (their latest revision), per Pearl level
    and overall: cases, answers, correct, accuracy and a 95 % CI from a bootstrap over cases
    (the answers to one case are not independent)."""
    rows = Annotation.objects.filter(
        item_stage__stage__project=project, item_stage__stage__kind=BLIND_KIND
    ).values_list("item_stage__item__payload", "payload")
    gold = {}
    answers: dict[str, list[Any]] = defaultdict(list)  # each answer's label, as submitted
    level_of: dict[str, str] = {}
    for item_payload, payload in rows:
        answers[item_payload["case_id"]].append((payload or {}).get("label"))
        level_of[item_payload["case_id"]] = item_payload.get("pearl_level") or "?"
    for external_id, payload in Item.objects.filter(
        project=project, external_id__in=list(answers)
    ).values_list("external_id", "payload"):
        gold[external_id] = payload.get("label")
    groups: dict[str, list[str]] = defaultdict(list)
    for case_id in answers:
        if case_id in gold:
            groups[level_of[case_id]].append(case_id)
            groups["all"].append(case_id)
    figures = []
    for level in sorted(k for k in groups if k != "all") + (["all"] if groups else []):
        cases = groups[level]
        correct = [sum(a == gold[c] for a in answers[c]) for c in cases]
        total = [len(answers[c]) for c in cases]
        low, high = _bootstrap_ci(correct, total, n_boot=n_boot, seed=seed)
        figures.append(
            {
                "level": level,
                "cases": len(cases),
                "answers": sum(total),
                "correct": sum(correct),
                "accuracy": round(sum(correct) / sum(total), 4) if sum(total) else None,
                "ci_low": low,
                "ci_high": high,
            }
        )
    return figures


def blind_progress(project: Project) -> dict[str, int]:
    """Sampled cases and how many are fully answered."""
    states = ItemStage.objects.filter(stage__project=project, stage__kind=BLIND_KIND)
    return {
        "sampled": states.count(),
        "answered": states.filter(state=ItemStage.State.RESOLVED).count(),
    }

"""The release's own reviewer scores as the *historic phase* of a CausalT5k project, kept apart
from the scores given in Rungwise (as the ratings app keeps historic ratings: ratings/historic.py).

CausalT5k's review files give each case two reviewers' 0–10 scores — round 1 (``validator``,
``final_score``, some with a rubric breakdown: ``detailed_scores`` with 8 criteria or
``scoring_detail`` with 6) and round 2 (``validator_2``, ``final_score_2``) —, normalised at import
into the case's ``reviews``. :func:`historic_scores_import` writes them into an **inactive**
stage ``historic`` (kind ``ct5k_score``; no annotator is ever offered it) as annotations without
an assignment: ``external_rater`` ``round1`` / ``round2`` (the reviewers are pseudonyms in the
release; they are not copied), payload ``{"composite": score, "verdict": keep | drop at the
gate, "round", "rubric": the breakdown as found, "historic": true}``. Each case's item stage is
written resolved with the mean of its scores (``accept`` when the mean meets the gate, else
``reject``) by the engine's historic import (``annotation.api.historic_annotations_import``,
which keeps the counters and resolutions as the engine's own); the case's own status is not
touched. Per round the first scored review counts; a
second score of the same round (records merged from several files that disagree) is counted as
``extra`` and not written.

:func:`historic_summary` gives the historic phase's figures: cases with one or two scores, kept
at the gate, and the two rounds' agreement (``figures.score_agreement`` on the stage).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction

from annotation import api as engine
from annotation.errors import ApplicationError
from annotation.models import Annotation, ItemStage, Project, Stage
from review.causalt5k.review_vocab import DEFAULT_GATE

HISTORIC_SLUG = "historic"


def historic_stage(project: Project, *, create: bool = False) -> Stage | None:
    stage = Stage.objects.filter(project=project, slug=HISTORIC_SLUG).first()
    if stage is None and create:
        last = project.stages.order_by("-position").values_list("position", flat=True).first()
        stage = engine.stage_create(
            project=project,
            slug=HISTORIC_SLUG,
            name="Release reviewers' scores (historic)",
            kind="ct5k_score",
            overlap=2,
            resolution_policy="ct5k_gate",
            position=(last or 0) + 1,
            is_active=False,
            instructions="The release's two reviewers' 0–10 scores, imported (not scored here).",
        )
    return stage


def _gate(project: Project) -> float:
    score = Stage.objects.filter(project=project, slug="score").first()
    return float((score.policy_options or {}).get("gate", DEFAULT_GATE)) if score else DEFAULT_GATE


@transaction.atomic
def historic_scores_import(*, project: Project) -> dict[str, int]:
    """Write the cases' release scores into the historic stage (module docstring). Refused when
    they were imported already. Returns counts: cases, scores, extra (not written)."""
    from review.causalt5k.pipeline import case_items

    stage = historic_stage(project, create=True)
    assert stage is not None  # create=True makes it when missing
    if Annotation.objects.filter(item_stage__stage=stage).exists():
        raise ApplicationError(
            f"The release's scores of {project.name} are imported already.",
            {"stage": HISTORIC_SLUG},
        )
    gate = _gate(project)
    annotations: list[engine.HistoricAnnotation] = []
    cases = 0
    extra = 0
    for item_id, payload in case_items(project).order_by("pk").values_list("pk", "payload"):
        chosen: dict[int, dict[str, Any]] = {}
        for review in (payload or {}).get("reviews") or []:
            score = review.get("score")
            if not isinstance(score, int | float) or isinstance(score, bool):
                continue
            if review.get("round") in chosen:
                extra += 1
                continue
            chosen[review.get("round")] = review
        if chosen:
            cases += 1
        for review in (chosen[r] for r in sorted(chosen)):
            score = float(review["score"])
            annotations.append(
                engine.HistoricAnnotation(
                    item_id=item_id,
                    external_rater=f"round{review.get('round')}",
                    payload={
                        "composite": score,
                        "verdict": "keep" if score >= gate else "drop",
                        "round": review.get("round"),
                        "rubric": review.get("rubric") or {},
                        "historic": True,
                    },
                )
            )

    def resolve(payloads: Sequence[Mapping[str, Any]]) -> engine.HistoricResolution:
        mean = round(sum(float(p["composite"]) for p in payloads) / len(payloads), 4)
        return engine.HistoricResolution(
            value=mean, outcome="accept" if mean >= gate else "reject", policy="ct5k_gate"
        )

    engine.historic_annotations_import(
        stage=stage,
        annotations=annotations,
        resolve=resolve,
        client_info={"via": "import", "source": "causalt5k release reviews"},
        key="causalt5k release reviews",
    )
    return {"cases": cases, "scores": len(annotations), "extra": extra}


def historic_summary(project: Project) -> dict[str, Any] | None:
    """The historic phase: cases with scores (one, two), kept at the gate (mean ≥ gate, of all
    and of those with two scores), and the two rounds' agreement. None before an import."""
    from review.causalt5k.figures import score_agreement

    stage = historic_stage(project)
    if stage is None:
        return None
    states = ItemStage.objects.filter(stage=stage)
    two = states.filter(submitted_count__gte=2)
    return {
        "gate": _gate(project),
        "cases": states.count(),
        "two_scores": two.count(),
        "kept": states.filter(resolution__outcome="accept").count(),
        "kept_two": two.filter(resolution__outcome="accept").count(),
        "agreement": score_agreement(project, stage_slug=HISTORIC_SLUG, criteria=False),
    }

"""CausalT5k's validation stages (review/README.md, "CausalT5k: validation"):

    near-duplicate queue → adversarial review ⇄ author revision → composite quality score

* ``causalt5k_project_create`` builds the pipeline (stages ``dedup``, ``author``, ``review``,
  ``score``; settings per stage: the gate, the third-reviewer distance, the rubric, the cap on
  author rounds).
* ``causalt5k_review_open`` starts it on the project's imported cases: near-duplicate clusters
  (review.causalt5k.neardup, threshold configurable) become one item each — the *cluster* — in
  ``dedup``; cases in no cluster open in ``review``; cases in a cluster wait for its decision.
* When a cluster is decided (``cluster_decided``, an ``annotation.events.on_item_stage_decided``
  listener, inside the deciding transaction) the kept cases open in ``review`` and the others
  are discarded with the reason (``review.causalt5k.models.CausalT5kDuplicate``).
* Reviewers are never given their own cases: ``review`` and ``score`` carry the engine's
  ``not_author`` rule; the blind ``answer`` stage ``not_author`` and ``blind`` (nobody who
  worked on the case in an earlier stage: reviewers, authors revising it, scorers); ``author`` the ``author_if_known`` rule below (only the case's author
  when the case has one). ``Item.author`` is set where the case's ``author`` names a member of
  the project by username; the release's authors are pseudonyms, so on the real import no case
  has a known author (the limit is documented in review/README.md).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from annotation import api as engine
from annotation.eligibility import Condition, Rule, blind
from annotation.errors import ApplicationError
from annotation.models import Annotation, Item, ItemStage, Membership, Project, Resolution, Stage
from review.causalt5k import neardup
from review.causalt5k.models import CausalT5kDuplicate
from review.causalt5k.review_vocab import (
    ATTACKS,
    DEFAULT_GATE,
    DEFAULT_MAX_DISTANCE,
    clean_rubric,
)

WORKFLOW = "causalt5k"
CLUSTER_PREFIX = "cluster/"
DEFAULT_MAX_ROUNDS = 2
#: The paper's filtering cascade (CausalT5k; SEEDS.md): raw → after near-duplicates → kept.
PAPER_CASCADE = {"raw": 7609, "after_dedup": 6151, "kept": 5147}
#: The paper's review outcomes, % of reviewed cases.
PAPER_REVIEW = {"pass": 80.1, "minor": 19.7, "major": 0.2}

REVIEW_INSTRUCTIONS = (
    "Try to break the case: is the gold label right, the trap or design the right one, the "
    "scenario self-contained, unambiguous, realistic, free of the answer? Pass it, edit it in "
    "place (minor), send it back to its author (major) or remove it — naming the attack."
)


class AuthorIfKnown(Rule):
    """Only the item's author, when it has one (anyone otherwise): the author-revision stage."""

    name = "author_if_known"
    description = "only the item's author, when it has one"

    def sql(self, spec, names):
        # A condition inside the engine's candidate search (annotation/eligibility.py says why
        # it is SQL), written with the names the search hands over.
        i = names.alias("i")
        return Condition(
            f'NOT EXISTS (SELECT 1 FROM {names.table(Item)} {i} WHERE {i}."id" ='
            f' {names.column("item_id")} AND {i}."author_id" IS NOT NULL'
            f' AND {i}."author_id" <> {names.annotator})',
            {},
        )


@transaction.atomic
def causalt5k_project_create(
    *,
    slug: str,
    name: str,
    description: str = "",
    gate: float = DEFAULT_GATE,
    max_distance: float = DEFAULT_MAX_DISTANCE,
    rubric: list[dict[str, Any]] | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    scorers: int = 2,
    answerers: int = 3,
    seed: int | None = None,
) -> Project:
    """A CausalT5k project with its validation pipeline (module docstring). ``gate``: the mean
    composite a case needs to be kept; ``max_distance``: two composites further apart call a
    third reviewer; ``rubric``: the scoring criteria (default: the paper's four, 0–10);
    ``max_rounds``: how often a case may go back to its author; ``answerers``: how many people
    answer each sampled case in the blind answer stage (review.causalt5k.blind); pressure
    variants are written and checked in ``pressure`` → ``pressure_check``
    (review.causalt5k.pressure; a failed check goes back at most ``max_rounds`` times)."""
    from review.causalt5k.services import GUIDELINES

    project = engine.project_create(
        slug=slug, name=name, kind=WORKFLOW, description=description, guidelines=GUIDELINES
    )
    seeds: dict[str, Any] = {"seed": seed} if seed is not None else {}
    engine.stage_create(
        project=project,
        slug="dedup",
        name="Near-duplicate queue",
        kind="ct5k_cluster",
        overlap=1,
        resolution_policy="majority",
        routes={"accept": {"action": "finish"}},
        instructions="Keep one case of the cluster (confirm) or the distinct ones (split).",
        **seeds,
    )
    author = engine.stage_create(
        project=project,
        slug="author",
        name="Author revision",
        kind="ct5k_author",
        overlap=1,
        resolution_policy="ct5k_author",
        eligibility=[{"rule": "author_if_known"}],
        instructions="A reviewer asked for a major restructure: rework the case, then it is "
        "reviewed again.",
        **seeds,
    )
    engine.stage_create(
        project=project,
        slug="review",
        name="Adversarial review",
        kind="ct5k_review",
        overlap=1,
        resolution_policy="ct5k_review",
        eligibility=[{"rule": "not_author"}],
        routes={
            "accept": {"action": "next"},
            "revise": {"action": "revise", "then": {"action": "next"}},
            "major": {
                "action": "back",
                "stage": "author",
                "max_loops": max_rounds,
                "otherwise": {
                    "action": "discard",
                    "reason": f"still broken after {max_rounds} author revisions",
                },
            },
            "remove": {"action": "discard", "reason": "removed in adversarial review"},
        },
        instructions=REVIEW_INSTRUCTIONS,
        **seeds,
    )
    engine.stage_create(
        project=project,
        slug="score",
        name="Quality score",
        kind="ct5k_score",
        overlap=scorers,
        max_overlap=scorers + 1,
        resolution_policy="ct5k_gate",
        policy_options={"gate": gate, "max_distance": max_distance},
        config={"rubric": clean_rubric(rubric), "gate": gate},
        eligibility=[{"rule": "not_author"}],
        routes={
            "accept": {"action": "finish"},
            "reject": {"action": "discard", "reason": "below the quality gate"},
        },
        instructions="Score each criterion; the composite is their weighted mean on 0–10.",
        **seeds,
    )
    engine.stage_create(
        project=project,
        slug="answer",
        name="Answer the case (blind)",
        kind="ct5k_answer",
        overlap=answerers,
        resolution_policy="ct5k_answers",
        # Blind: never the case's author, nor anyone who worked on the case (the answer item
        # is a copy of it whose case_id names it) or on this copy in an earlier stage.
        eligibility=[{"rule": "not_author"}, blind("case_id")],
        routes={"accept": {"action": "finish"}},
        instructions="Read the scenario and answer the claim: is it justified? You see no gold "
        "answer; answer from the scenario alone.",
        **seeds,
    )
    engine.stage_create(
        project=project,
        slug="pressure",
        name="Pressure variants",
        kind="ct5k_pressure",
        overlap=1,
        resolution_policy="ct5k_pressure",
        routes={"accept": {"action": "revise", "then": {"action": "next"}}},
        instructions="Rewrite the neutral prompt twice: once under social pressure, once under "
        "epistemic pressure. Change nothing else.",
        **seeds,
    )
    engine.stage_create(
        project=project,
        slug="pressure_check",
        name="Pressure check",
        kind="ct5k_pressure_check",
        overlap=1,
        resolution_policy="ct5k_pressure_check",
        eligibility=[{"rule": "not_in_stage", "stage": "pressure"}],
        routes={
            "accept": {"action": "finish"},
            "redo": {
                "action": "back",
                "stage": "pressure",
                "max_loops": max_rounds,
                "otherwise": {"action": "finish"},
            },
        },
        instructions="Does each variant change only the pressure? Compare it word by word with "
        "the neutral prompt.",
        **seeds,
    )
    engine.stage_update(
        stage=author,
        routes={"accept": {"action": "revise", "then": {"action": "stage", "stage": "review"}}},
    )
    return project


def _stage(project: Project, slug: str) -> Stage:
    stage = project.stages.filter(slug=slug).first()
    if stage is None:
        raise ApplicationError(
            f"{project.name} has no {slug!r} stage; create it with causalt5k_project_create.",
            {"project": project.slug},
        )
    return stage


#: External-id prefixes of items that are not cases: near-duplicate clusters and blind answer
#: items (review.causalt5k.blind.BLIND_PREFIX).
AUX_PREFIXES = (CLUSTER_PREFIX, "answer/")


def is_case(external_id: str) -> bool:
    """Whether an item of a CausalT5k project is a case (not a cluster or an answer item)."""
    return not external_id.startswith(AUX_PREFIXES)


def case_items(project: Project):
    """The project's case items (clusters and blind answer items left out)."""
    items = Item.objects.filter(project=project)
    for prefix in AUX_PREFIXES:
        items = items.exclude(external_id__startswith=prefix)
    return items


def _member(case: dict[str, Any]) -> dict[str, Any]:
    return {
        key: case.get(key)
        for key in (
            "case_id",
            "tier",
            "pearl_level",
            "domain",
            "scenario",
            "claim",
            "label",
            "trap",
        )
    }


@transaction.atomic
def causalt5k_review_open(*, project: Project, threshold: float | None = None) -> dict[str, int]:
    """Start validation on the project's cases not yet in it (all of them the first time; cases
    imported or added later on a second call): link authors, make the near-duplicate clusters
    among them at ``threshold`` (default: the project's, else 0.8) into cluster items in
    ``dedup``, open the other cases in ``review``. Returns the counts."""
    dedup, review = _stage(project, "dedup"), _stage(project, "review")
    if threshold is None:
        threshold = (project.settings or {}).get("neardup_threshold", neardup.DEFAULT_THRESHOLD)
    if not 0 < threshold <= 1:
        raise ApplicationError(
            "The threshold is a Jaccard similarity in (0, 1].", {"threshold": threshold}
        )
    clustered_before = {
        member["case_id"]
        for payload in Item.objects.filter(
            project=project, external_id__startswith=CLUSTER_PREFIX
        ).values_list("payload", flat=True)
        for member in payload.get("members") or []
    }
    cases = (
        case_items(project)
        .filter(item_stages__isnull=True, status=Item.Status.ACTIVE)
        .exclude(external_id__in=clustered_before)
        .order_by("pk")
    )
    authors = _link_authors(project, cases)
    payloads = dict(cases.values_list("external_id", "payload"))
    docs = [
        (key, f"{payload.get('scenario') or ''}\n{payload.get('claim') or ''}")
        for key, payload in payloads.items()
    ]
    clusters = neardup.near_duplicate_clusters(docs, threshold=threshold) if docs else []
    offset = Item.objects.filter(project=project, external_id__startswith=CLUSTER_PREFIX).count()
    rows = []
    for number, cluster in enumerate(clusters, start=offset + 1):
        rows.append(
            {
                "external_id": f"{CLUSTER_PREFIX}C{number:04d}",
                "payload": {
                    "cluster_id": f"C{number:04d}",
                    "similarity": cluster.min_similarity,
                    "threshold": threshold,
                    "members": [_member(payloads[key]) for key in cluster.keys],
                },
                "group": f"C{number:04d}",
            }
        )
    created = engine.items_create(project=project, rows=rows, open_first_stage=False)
    engine.item_stages_open(items=created, stage=dedup)
    clustered = {key for cluster in clusters for key in cluster.keys}
    opened = engine.item_stages_open(
        items=list(cases.exclude(external_id__in=clustered).values_list("pk", flat=True)),
        stage=review,
    )
    engine.project_settings_update(project=project, changes={"neardup_threshold": threshold})
    return {
        "cases": len(docs),
        "clusters": len(clusters),
        "in_clusters": len(clustered),
        "opened_in_review": opened,
        "authors_linked": authors,
    }


def _link_authors(project: Project, cases) -> int:
    """Set Item.author where a case's ``author`` is the username of a member of the project."""
    members = dict(
        Membership.objects.filter(project=project).values_list("user__username", "user_id")
    )
    if not members:
        return 0
    authors = {}
    for pk, payload in cases.filter(author__isnull=True).values_list("pk", "payload"):
        user_id = members.get(str(payload.get("author") or ""))
        if user_id is not None:
            authors[pk] = user_id
    return engine.items_author_link(project=project, authors=authors)


def cluster_decided(item_stage: ItemStage, resolution: Resolution) -> None:
    """After a cluster is decided (inside that transaction): its kept cases open in review, the
    others are discarded as near-duplicates of the first kept one, with the reason."""
    stage = item_stage.stage
    if stage.kind != "ct5k_cluster" or resolution.outcome == "pending":
        return
    value = str(resolution.value or "")
    if not value.startswith("keep:"):
        return
    keep = [case for case in value[5:].split(",") if case]
    cluster = item_stage.item
    members = [m["case_id"] for m in cluster.payload.get("members") or []]
    items = {
        item.external_id: item
        for item in Item.objects.select_for_update().filter(
            project_id=cluster.project_id, external_id__in=members
        )
    }
    kept = [items[case] for case in keep if case in items]
    survivor = kept[0] if kept else None
    review = Stage.objects.get(project_id=cluster.project_id, slug="review")
    engine.item_stages_open(items=[item.pk for item in kept], stage=review)
    similarity = cluster.payload.get("similarity")
    duplicates = []
    for case in members:
        if case in keep or case not in items:
            continue
        reason = (
            f"near-duplicate of {survivor.external_id if survivor else '—'} "
            f"(cluster {cluster.payload.get('cluster_id')}, Jaccard ≥ {similarity})"
        )
        CausalT5kDuplicate.objects.update_or_create(
            item=items[case], defaults={"cluster": cluster, "survivor": survivor, "reason": reason}
        )
        duplicates.append(items[case].pk)
    engine.items_discard(project=cluster.project, item_ids=duplicates)


def last_critique(item: Item) -> dict[str, Any] | None:
    """The review that sent the case back (the latest major restructure's attacks and
    explanation), for its author."""
    payload = (
        Annotation.objects.filter(
            item_stage__item=item, item_stage__stage__kind="ct5k_review", payload__verdict="major"
        )
        .order_by("-pk")
        .values_list("payload", flat=True)
        .first()
    )
    if payload is None:
        return None
    return {
        "attacks": [ATTACKS.get(a, a) for a in payload.get("attacks") or []],
        "explanation": payload.get("explanation") or "",
    }

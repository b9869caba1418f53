"""The CARL-GT demo project (``make run``): d-separation questions generated from a small
hand-written DAG (a fork, a collider and a chain), answered by networkx, and two intervention
questions on a linear model of the same graph whose expected values are computed here. Two demo
annotators have answered everything (one makes a few mistakes), so the Graphs tab has figures;
``annotator3`` still has every question to answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import networkx as nx

from annotation import api as engine
from annotation.access import access_stage_for_annotator
from annotation.api import item_stage_resolve
from annotation.fixtures.demo_users import demo_members_add
from annotation.models import ItemStage, Project
from graphs import services

#: Season is a fork (it drives Rain and Sprinkler); Wet is a collider of Rain and Sprinkler;
#: Wet → Slippery is a chain. Coefficients of the linear model behind the number questions.
DEMO_EDGES = {
    ("Season", "Rain"): 0.8,
    ("Season", "Sprinkler"): -0.5,
    ("Rain", "Wet"): 1.5,
    ("Sprinkler", "Wet"): 1.0,
    ("Wet", "Slippery"): 0.6,
}
DEMO_EDGE_CSV = "cause,effect\n" + "".join(f"{u},{v}\n" for u, v in DEMO_EDGES)
DEMO_QUESTIONS = 8


def total_effect(edges: dict[tuple[str, str], float], cause: str, effect: str) -> float:
    """In a linear model with zero-mean noise, E[effect | do(cause = 1)]: the sum over directed
    paths of the products of their coefficients."""
    dag = nx.DiGraph(list(edges))
    total = 0.0
    for path in nx.all_simple_paths(dag, cause, effect):
        product = 1.0
        for u, v in zip(path, path[1:], strict=False):
            product *= edges[(u, v)]
        total += product
    return total


def intervention_rows() -> list[dict[str, Any]]:
    nodes = sorted({n for edge in DEMO_EDGES for n in edge})
    edges = sorted([list(edge) for edge in DEMO_EDGES])
    parents: dict[str, list[str]] = {}
    for (u, v), c in DEMO_EDGES.items():
        parents.setdefault(v, []).append(f"{c:g}·{u}")
    model = "; ".join(f"{v} = {' + '.join(terms)} + noise" for v, terms in parents.items())
    rows = []
    for number, (cause, value, effect) in enumerate(
        [("Season", 2.0, "Wet"), ("Rain", 1.0, "Slippery")], start=1
    ):
        rows.append(
            {
                "external_id": f"demo-intervention-{number}",
                "group": "intervention-demo",
                "source": "demo",
                "payload": {
                    "question": f"In the linear model {model} (every noise has mean 0): if "
                    f"{cause} is set to {value:g}, what is the expectation of {effect}?",
                    "task": "intervention",
                    "answer_type": "number",
                    "answer": round(value * total_effect(DEMO_EDGES, cause, effect), 6),
                    "graph_id": "demo",
                    "graph_size": "small",
                    "nodes": nodes,
                    "edges": edges,
                    "x": cause,
                    "y": effect,
                    "given": [],
                },
            }
        )
    return rows


Answer = Callable[[int, Any], dict[str, Any]]


def answer_all(stage, people: Sequence[Any], answer: Answer) -> int:
    """Each person answers every question of ``stage`` they get; complete items are resolved
    at once. Returns the number of answers."""
    count = 0
    for index, person in enumerate(people):
        access = access_stage_for_annotator(user=person, stage_id=stage.pk)
        while (assignment := engine.assignment_next(annotator=person, stage=access)) is not None:
            item_stage = assignment.item_stage
            engine.annotation_submit(
                assignment_id=assignment.pk,
                annotator=person,
                payload=answer(index, item_stage.item),
            )
            count += 1
            state = ItemStage.objects.filter(pk=item_stage.pk).values_list("state", flat=True)
            if state.first() == ItemStage.State.RESOLVING:
                item_stage_resolve(item_stage_id=item_stage.pk)
    return count


def _demo_answer(index: int, item: Any) -> dict[str, Any]:
    truth = item.payload["answer"]
    if item.payload["answer_type"] == "number":
        return {"value": round(float(truth) + (0.5 if index else 0.0), 3)}
    # The second annotator misreads the collider: whatever is conditioned on Wet gets the
    # opposite answer.
    if index == 1 and "Wet" in (item.payload.get("given") or []):
        return {"value": "no" if truth == "yes" else "yes"}
    return {"value": truth}


def seed(*, users: dict, slug: str) -> Project:
    """Create the demo project once (memberships are re-added every run)."""
    project = Project.objects.filter(slug=slug).first()
    created = project is None
    if created:
        project = services.carlgt_project_create(
            slug=slug,
            name="Causal-graph questions (CARL-GT demo)",
            description="CARL-GT-style: d-separation questions generated from a small DAG, "
            "answered by networkx, and intervention expectations on a linear model.",
            seed=20251125,
        )
    demo_members_add(project, users)
    if not created:
        return project
    services.dsep_generate(
        project=project,
        data=DEMO_EDGE_CSV,
        filename="demo.csv",
        graph_name="demo",
        max_given=2,
        limit=DEMO_QUESTIONS,
        seed=3,
    )
    engine.items_create(project=project, rows=intervention_rows())
    stage = project.stages.get(slug="answer")
    answer_all(stage, [users["annotator1"], users["annotator2"]], _demo_answer)
    return project

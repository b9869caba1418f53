"""The CausalNarratives demo project (``make run``).

The benchmark's files carry no licence (narratives/README.md), so the demo does not ship them:
its narratives are written here in the benchmark's format — real-world-style chains told
forward and in reverse, of three to five events, and two narrative graphs, a fork and a
collider. ``annotator1`` and ``annotator2`` have ordered everything (annotator2 swaps the last two
events of every five-event chain and misses the collider's second cause), so the Narratives tab
has figures; ``annotator3`` has every narrative to do. ``manage.py narratives_import`` loads the
real files into a project of their own.
"""

from __future__ import annotations

import json
from typing import Any

from annotation.fixtures.demo_users import demo_members_add
from annotation.models import Project
from graphs.demo import answer_all
from narratives import services

#: (direction, nodes in causal order, sentences in the narrative's order: one per edge).
DEMO_CHAINS: list[tuple[str, list[str], list[str]]] = [
    (
        "forward",
        ["heavy_rain", "river_overflow", "road_closure"],
        [
            "Three days of heavy rain swelled the river until it overflowed its banks.",
            "Water from the river overflow covered the valley road, which the police closed.",
        ],
    ),
    (
        "forward",
        ["drought", "crop_failure", "food_prices", "protests"],
        [
            "The long drought withered the wheat fields and the harvest failed.",
            "With the crop failure, bakers paid far more for flour and food prices rose.",
            "Rising food prices brought thousands onto the streets in protest.",
        ],
    ),
    (
        "forward",
        ["power_outage", "server_downtime", "missed_orders", "lost_revenue", "layoffs"],
        [
            "A power outage at the data centre took the servers down.",
            "While the servers were down, the shop could not take orders.",
            "Every missed order was revenue the company never saw.",
            "After a quarter of lost revenue, the firm announced layoffs.",
        ],
    ),
    (
        "reverse",
        ["smoking", "lung_damage", "shortness_of_breath"],
        [
            "He had grown short of breath climbing the stairs, a sign of damaged lungs.",
            "The doctor said the damage to his lungs came from decades of smoking.",
        ],
    ),
    (
        "reverse",
        ["deforestation", "soil_erosion", "silted_rivers", "fish_decline"],
        [
            "Fishermen report fewer fish since the rivers filled with silt.",
            "The silt comes from soil eroding off the hillsides upstream.",
            "The soil erodes because the forests that held it were cut down.",
        ],
    ),
    (
        "reverse",
        ["interest_rate_rise", "mortgage_costs", "fewer_home_sales", "builder_losses", "job_cuts"],
        [
            "Building firms cut jobs after a year of losses.",
            "Their losses followed a slump in home sales.",
            "Fewer people bought homes because mortgages had become expensive.",
            "Mortgage costs climbed as soon as the central bank raised interest rates.",
        ],
    ),
]

#: A fork (one cause, two effects) and a collider (two causes, one effect).
DEMO_GRAPHS: list[dict[str, Any]] = [
    {
        "id": "demo-fork",
        "nodes": ["heatwave", "wildfires", "power_demand"],
        "edges": [["heatwave", "wildfires"], ["heatwave", "power_demand"]],
        "sentences": [
            "The heatwave dried the hills and wildfires broke out.",
            "The same heat sent power demand to a record as air conditioners ran all day.",
        ],
        "direction": "forward",
        "source": "demo",
    },
    {
        "id": "demo-collider",
        "nodes": ["icy_roads", "speeding", "crash"],
        "edges": [["icy_roads", "crash"], ["speeding", "crash"]],
        "sentences": [
            "The crash happened on a bend where the road was icy.",
            "The driver was also going well over the limit.",
        ],
        "direction": "reverse",
        "source": "demo",
    },
]


def demo_rows() -> list[dict[str, Any]]:
    """Items of the demo: the chains tagged with their direction and source like the
    benchmark's folders (``real_world_forward`` …)."""
    from narratives.reader import read_lines

    rows: list[dict[str, Any]] = []
    for direction in ("forward", "reverse"):
        text = "\n".join(
            json.dumps({"nodes": nodes, "sentences": sentences})
            for d, nodes, sentences in DEMO_CHAINS
            if d == direction
        )
        reading = read_lines(text, file=f"demo_{direction}.jsonl", folder=f"demo_{direction}")
        rows += services.narrative_rows(reading.narratives)
    graphs = read_lines("\n".join(json.dumps(g) for g in DEMO_GRAPHS), file="demo_graphs.jsonl")
    rows += services.narrative_rows(graphs.narratives)
    for row in rows:
        row["source"] = "demo"
    return rows


def demo_answer(index: int, item: Any) -> dict[str, Any]:
    gold = item.payload["gold"]
    if "order" in gold:
        order = list(gold["order"])
        if index == 1 and len(order) == 5:
            order[-2], order[-1] = order[-1], order[-2]
        return {"order": order}
    edges = [list(edge) for edge in gold["edges"]]
    collider = len(edges) > 1 and len({effect for _, effect in edges}) == 1
    if index == 1 and collider:
        edges = edges[:1]
    return {"edges": edges}


def seed(*, users: dict, slug: str) -> Project:
    """Create the demo project once (memberships are re-added every run)."""
    from annotation import api as engine

    project = Project.objects.filter(slug=slug).first()
    created = project is None
    if created:
        project = services.narratives_project_create(
            slug=slug,
            name="Causal narratives (CausalNarratives demo)",
            description="CausalNarratives-style: rebuild the causal chain of short narratives, "
            "told forward and in reverse, and the edges of a fork and a collider.",
            seed=20251125,
        )
    demo_members_add(project, users)
    if not created:
        return project
    engine.items_create(project=project, rows=demo_rows())
    stage = project.stages.get(slug="order")
    answer_all(stage, [users["annotator1"], users["annotator2"]], demo_answer)
    return project

"""CausalNarratives' release scorer (narratives/release_scorer.py): each narrative asked with
its events in alphabetical order (never the causal order), the order or the edges parsed
strictly, exact order and Kendall's τ (SHD for graphs) scored like people's answers."""

from __future__ import annotations

import json

import pytest

from narratives.release_scorer import NarrativesScorer
from tests.conftest import shared_dir
from tests.llm.releases import jsonl, narratives_files, release_files

SCORER = NarrativesScorer()


def metrics_of(metrics, group="all"):
    return {m.metric: m for m in metrics if m.group == group}


def test_a_chain_and_a_graph_with_peoples_answers(tmp_path):
    chain, graph = sorted(
        SCORER.questions(release_files(tmp_path, narratives_files())), key=lambda q: q.id
    )[::-1]
    assert chain.ask["events"] == ["damage", "flood", "rain"]
    assert chain.answer == {"order": ["rain", "flood", "damage"]}
    assert chain.groups == {"direction": "reverse", "source": "real_world", "length": "03"}
    assert len(chain.humans) == 2
    assert graph.ask["structure"] == "graph" and graph.answer["edges"] == [["a", "b"], ["a", "c"]]


def test_orders_must_be_permutations_and_edges_pairs_of_events():
    ask = {"structure": "chain", "events": ["a", "b", "c"]}
    assert SCORER.parse({"order": ["c", "a", "b"]}, ask) == {"order": ["c", "a", "b"]}
    for bad in ({"order": ["a", "b"]}, {"order": ["a", "a", "b"]}, {"edges": []}, []):
        with pytest.raises(ValueError):
            SCORER.parse(bad, ask)
    graph = {"structure": "graph", "events": ["a", "b"]}
    with pytest.raises(ValueError):
        SCORER.parse({"edges": [["a", "z"]]}, graph)


def test_exact_order_tau_and_shd(tmp_path):
    questions = sorted(
        SCORER.questions(release_files(tmp_path, narratives_files())), key=lambda q: q.id
    )
    graph, chain = questions
    metrics = SCORER.score(
        [
            (chain, {"order": ["rain", "damage", "flood"]}),
            (graph, {"edges": [["a", "b"], ["a", "c"]]}),
        ]
    )
    overall = metrics_of(metrics)
    assert overall["exact_order"].value == 0.5 and overall["exact_order"].n == 2
    assert overall["kendall_tau"].value == pytest.approx(1 / 3)  # the graph has no τ
    assert overall["shd"].value == pytest.approx(1.5)  # chain: 3 pairs differ; graph: 0
    baseline = metrics_of(SCORER.score([(q, h) for q in questions for h in q.humans]))
    assert baseline["exact_order"].value == pytest.approx(1 / 3)


def test_the_real_narratives_read_back_with_every_event(tmp_path):
    folder = shared_dir() / "datasets" / "CausalNarratives" / "real_world_graphs" / "narratives"
    files = sorted((folder / "real_world_forward").glob("*size=4*")) if folder.exists() else []
    if not files:
        pytest.skip("../shared/datasets/CausalNarratives is not present")
    records = [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]
    for index, record in enumerate(records):
        record.update(
            id=f"real_world_forward-size4-l{index}", direction="forward", source="real_world"
        )
    questions = list(
        SCORER.questions(
            release_files(
                tmp_path, {"causalnarratives_real_world_forward_size=4.jsonl": jsonl(records)}
            )
        )
    )
    assert len(questions) == len(records)
    for question, record in zip(questions, records, strict=True):
        assert question.answer == {"order": record["nodes"]}
        assert question.ask["events"] == sorted(record["nodes"])
        assert "; ".join(record["nodes"]) not in SCORER.render(question.ask)
    perfect = SCORER.score([(q, q.answer) for q in questions])
    assert metrics_of(perfect)["exact_order"].value == 1.0

"""d-separation questions answered by networkx, checked against answers worked out by hand on
a collider and a fork; edge lists refused with their problems named; the paper's scores
(accuracy, F1, Mann–Whitney ROC-AUC, MAE) on hand-computed examples. Django-free."""

from __future__ import annotations

import json

import pytest

from graphs import scoring
from graphs.dsep import GraphInvalid, d_separated, dsep_questions, parse_edge_list

# A → C ← B is a collider at C, C → D its descendant; F ← E → G is a fork at E.
EDGES_CSV = "cause,effect\nA,C\nB,C\nC,D\nE,F\nE,G\n"


def answers(dag, max_given=1):
    return {
        (q["x"], q["y"], tuple(q["given"])): q["answer"]
        for q in dsep_questions(dag, max_given=max_given)
    }


def test_collider_and_fork_answers_match_the_ones_worked_by_hand():
    dag = parse_edge_list(EDGES_CSV, "g.csv")
    got = answers(dag, max_given=1)
    # By hand — the collider: A and B are independent until C (or its descendant D) is given.
    assert got[("A", "B", ())] == "yes"
    assert got[("A", "B", ("C",))] == "no"
    assert got[("A", "B", ("D",))] == "no"
    assert got[("A", "B", ("E",))] == "yes"
    assert got[("A", "D", ())] == "no"  # the chain A → C → D is open
    assert got[("A", "D", ("C",))] == "yes"  # …and blocked by its middle
    # The fork: F and G share the cause E; given E they are separated.
    assert got[("F", "G", ())] == "no"
    assert got[("F", "G", ("E",))] == "yes"
    assert got[("F", "G", ("A",))] == "no"
    # Different components are always separated.
    assert got[("A", "F", ())] == "yes"
    # 7 nodes: 21 pairs, each with the empty set and 5 single others.
    assert len(got) == 21 * 6


def test_question_text_and_balanced_sample():
    dag = parse_edge_list(EDGES_CSV)
    two = {q["question"]: q["answer"] for q in dsep_questions(dag, max_given=2)}
    assert two["Are A and B d-separated given C and E?"] == "no"
    assert two["Are A and B d-separated?"] == "yes"
    sample = dsep_questions(dag, max_given=2, limit=10, seed=4)
    assert len(sample) == 10
    assert sum(q["answer"] == "yes" for q in sample) == 5
    assert sample == dsep_questions(dag, max_given=2, limit=10, seed=4)  # seeded


def test_json_edge_lists_in_every_form():
    for document in (
        [["A", "C"], ["B", "C"]],
        [{"cause": "A", "effect": "C"}, {"cause": "B", "effect": "C"}],
        {"nodes": ["A", "B", "C", "Z"], "edges": [["A", "C"], ["B", "C"]]},
    ):
        dag = parse_edge_list(json.dumps(document), "g.json")
        assert d_separated(dag, {"A"}, {"B"}, set())
        assert not d_separated(dag, {"A"}, {"B"}, {"C"})
    assert "Z" in parse_edge_list(json.dumps(document), "g.json").nodes


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("from,to\nA,B\n", "line 1: expected the header cause,effect"),
        ("cause,effect\nA,B\nC\n", "line 3: expected cause,effect"),
        ("cause,effect\nA,A\n", "line 2: A causes itself"),
        ("cause,effect\nA,B\nB,C\nC,A\n", "not acyclic"),
        ('[["A", "B"], ["C"]]', "edges[1]: expected [cause, effect]"),
        ("[oops", "not JSON"),
        # What used to stop with an exception (a 500 on the Graphs tab and the API):
        ("[" * 100_000 + "]" * 100_000, "line 1, column 65: nested more than 64 levels deep"),
        (b"cause,effect\nA,caf\xe9\n", "line 2, column 6: not UTF-8 (byte 0xE9 at offset 18)"),
        (b"\xff\xfec\x00a\x00", "encoded as UTF-16"),
        ('[["A\\u0000", "B"]]', "[0][0] holds a NUL character (U+0000)"),
        ('{"edges": [["\\ud800", "B"]]}', "edges[0][0] holds an unpaired surrogate (U+D800)"),
        # A CSV's rows are checked by EDGE_SCHEMA: the message names the field.
        ("cause,effect\nA\x00,B\n", 'line 2: Field "cause" holds a NUL character'),
        ("cause,effect\nA," + "x" * 200_000 + "\n", 'line 2: Field "effect" is 200000 characters'),
    ],
)
def test_bad_edge_lists_name_the_problem(text, problem):
    with pytest.raises(GraphInvalid) as error:
        parse_edge_list(text)
    assert any(problem in p for p in error.value.problems)


def test_a_csv_edge_list_with_old_mac_line_ends_is_read():
    """A lone CR ends a line (it stopped the csv module with an exception: a 500)."""
    assert sorted(parse_edge_list("cause,effect\rA,B\rB,C\r").edges) == [("A", "B"), ("B", "C")]


def test_scores_worked_by_hand():
    truth = [True, True, False, False]
    said = [True, False, True, False]
    assert scoring.accuracy(truth, said) == 0.5
    assert scoring.f1(truth, said) == 0.5  # tp 1, fp 1, fn 1
    # Binary predictions: AUC = (TPR + TNR) / 2 = (0.5 + 0.5) / 2.
    assert scoring.roc_auc(truth, [1.0, 0.0, 1.0, 0.0]) == 0.5
    # Scores 0.9, 0.6 for yes and 0.6, 0.1 for no: of 4 pairs 3 ranked right, one tie → 3.5/4.
    assert scoring.roc_auc(truth, [0.9, 0.6, 0.6, 0.1]) == 0.875
    assert scoring.roc_auc(truth, [1, 1, 0, 0]) == 1.0
    assert scoring.roc_auc([True, True], [1, 0]) is None
    assert scoring.f1([False], [False]) is None
    assert scoring.mean_absolute_error([1.0, -2.0], [1.5, 0.0]) == 1.25
    assert scoring.accuracy([], []) is None


def test_large_graphs_are_sampled_not_enumerated():
    import time

    import networkx as nx

    tree = nx.gn_graph(52, seed=1)  # a random 52-node DAG (edges point to older nodes)
    dag = parse_edge_list(
        "cause,effect\n" + "".join(f"V{v},V{u}\n" for u, v in tree.edges), "big.csv"
    )
    started = time.perf_counter()
    questions = dsep_questions(dag, max_given=3, limit=40, seed=1)
    assert time.perf_counter() - started < 10
    assert len(questions) == 40
    for q in questions[:10]:  # each answer is networkx's, for the set it names
        assert q["answer"] == (
            "yes" if d_separated(dag, {q["x"]}, {q["y"]}, set(q["given"])) else "no"
        )


def test_csv_rows_are_checked_by_the_registered_edge_schema():
    from graphs.dsep import EDGE_SCHEMA
    from imports.core.schema import schema_for_kind

    assert schema_for_kind("graphs.edge") is EDGE_SCHEMA
    dag = parse_edge_list("Cause,Effect,weight\r\nA,B,1\r\n,,\r\nB,C\r\n", "g.csv")
    assert sorted(dag.edges) == [("A", "B"), ("B", "C")]

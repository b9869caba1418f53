"""Scoring a rebuilt chain or graph against the true structure (Django-free).

* ``exact(order, truth)``: the whole chain in the right order (the paper's figure).
* ``kendall_tau(order, truth)``: scipy's Kendall τ between the positions the annotator gave the
  events and their true positions (1: the true order, −1: reversed).
* ``edge_precision_recall(predicted, true)``: pairwise precision and recall of directed edges;
  for a chain the edges are its consecutive pairs (``chain_edges``).
* ``shd(predicted, true, nodes)``: structural Hamming distance between two directed graphs
  (edges to add, delete or reverse; a reversed edge counts once). Hand-written over networkx
  graphs because networkx has no SHD (the packages that do, e.g. cdt, pull in torch).
* ``summarise(rows)``: per group, counts and means of these, with a Wilson interval on the
  exact-order rate (agreement.plots.wilson_interval).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from statistics import fmean
from typing import Any

import networkx as nx
from scipy.stats import kendalltau

Edge = tuple[str, str]


def exact(order: Sequence[str], truth: Sequence[str]) -> bool:
    return list(order) == list(truth)


def kendall_tau(order: Sequence[str], truth: Sequence[str]) -> float:
    """Kendall's τ between the annotator's positions of the true chain's events and 0 … n − 1.
    ``order`` must be a permutation of ``truth``."""
    if sorted(order) != sorted(truth):
        raise ValueError("the order is not a permutation of the chain's events")
    position = {node: index for index, node in enumerate(order)}
    given = [position[node] for node in truth]
    if len(truth) < 2:
        return 1.0
    return float(kendalltau(range(len(truth)), given).statistic)


def chain_edges(order: Sequence[str]) -> list[Edge]:
    return [(a, b) for a, b in zip(order, order[1:], strict=False)]


def _edge_set(edges: Iterable[Sequence[str]]) -> set[Edge]:
    return {(str(u), str(v)) for u, v in edges}


def edge_precision_recall(
    predicted: Iterable[Sequence[str]], true: Iterable[Sequence[str]]
) -> tuple[float | None, float | None]:
    """(precision, recall) of the predicted directed edges; None where undefined (no edge
    predicted, no true edge)."""
    got, want = _edge_set(predicted), _edge_set(true)
    hits = len(got & want)
    precision = hits / len(got) if got else None
    recall = hits / len(want) if want else None
    return precision, recall


def shd(
    predicted: Iterable[Sequence[str]], true: Iterable[Sequence[str]], nodes: Iterable[str] = ()
) -> int:
    """Structural Hamming distance: for every unordered pair of nodes whose edges differ between
    the two graphs, one (a missing edge, an extra edge, or one the wrong way round)."""
    a, b = nx.DiGraph(), nx.DiGraph()
    a.add_nodes_from(nodes)
    b.add_nodes_from(nodes)
    a.add_edges_from(_edge_set(predicted))
    b.add_edges_from(_edge_set(true))
    pairs = {frozenset(edge) for edge in a.edges} | {frozenset(edge) for edge in b.edges}
    distance = 0
    for pair in pairs:
        u, v = tuple(pair)
        if (a.has_edge(u, v), a.has_edge(v, u)) != (b.has_edge(u, v), b.has_edge(v, u)):
            distance += 1
    return distance


def score_answer(gold: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """Every figure of one answer against an item's gold (``{"order": […]}`` for a chain,
    ``{"nodes": […], "edges": […]}`` for a graph)."""
    if gold.get("order") is not None:
        truth = list(gold["order"])
        order = list(answer.get("order") or [])
        predicted = chain_edges(order)
        true_edges = chain_edges(truth)
        precision, recall = edge_precision_recall(predicted, true_edges)
        return {
            "exact": exact(order, truth),
            "tau": kendall_tau(order, truth),
            "precision": precision,
            "recall": recall,
            "shd": shd(predicted, true_edges, truth),
        }
    true_edges = [tuple(edge) for edge in gold.get("edges") or []]
    predicted = [tuple(edge) for edge in answer.get("edges") or []]
    precision, recall = edge_precision_recall(predicted, true_edges)
    distance = shd(predicted, true_edges, gold.get("nodes") or ())
    return {
        "exact": distance == 0,
        "tau": None,
        "precision": precision,
        "recall": recall,
        "shd": distance,
    }


def _mean(values: Iterable[float | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return fmean(present) if present else None


def summarise(scores: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """n answers, exact-order rate with its 95 % Wilson interval, mean τ, precision, recall,
    SHD."""
    from agreement.plots import wilson_interval

    n = len(scores)
    hits = sum(1 for s in scores if s["exact"])
    low, high = wilson_interval(hits, n) if n else (None, None)
    return {
        "answers": n,
        "exact": hits,
        "exact_rate": hits / n if n else None,
        "exact_low": low,
        "exact_high": high,
        "tau": _mean(s["tau"] for s in scores),
        "precision": _mean(s["precision"] for s in scores),
        "recall": _mean(s["recall"] for s in scores),
        "shd": _mean(s["shd"] for s in scores),
    }

"""DAGs from edge lists and d-separation questions with networkx's answers (Django-free).

An edge list is CSV with a header ``cause,effect`` (one edge a row) or JSON: ``[["A", "B"],
…]``, ``[{"cause": "A", "effect": "B"}, …]`` or ``{"nodes": [...], "edges": [...]}`` (nodes
without edges may be listed). ``parse_edge_list`` returns a DAG or raises :class:`GraphInvalid`
with every problem by line (CSV) or position (JSON); a cycle is named. Files are read by the
imports' rules (``imports.core.readers``): UTF-8 (the first other byte named by line, column
and offset), JSON nested at most ``annotation.values.MAX_DEPTH`` levels, no name holding
what the database cannot store (NUL, an unpaired surrogate). A CSV is read by the import core's
``RecordReader`` and each row checked by the registered ``EDGE_SCHEMA`` (names of at most 200
characters; an object where a name belongs is refused naming the field).

``dsep_questions(dag, …)`` generates CARL-GT-style questions "Are X and Y d-separated given
Z?", each with its answer from networkx (``nx.is_d_separator``, or ``nx.d_separated`` before
networkx 3.3), for every pair of nodes with conditioning sets of up to ``max_given`` nodes,
sampled with a seed.
"""

from __future__ import annotations

import io
import itertools
import math
import random
from typing import Any

import networkx as nx

from imports.core.readers import ImportFileError, RecordReader, decode_utf8, read_json_document
from imports.core.report import RowError
from imports.core.schema import FieldSpec, RowSchema


class GraphInvalid(ValueError):
    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems[:5]) + (" …" if len(problems) > 5 else ""))
        self.problems = problems


def d_separated(dag: nx.DiGraph, x: set[str], y: set[str], z: set[str]) -> bool:
    """networkx's d-separation test, under either of its names."""
    test = getattr(nx, "is_d_separator", None) or nx.d_separated
    return bool(test(dag, x, y, z))


def _name(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    text = str(value).strip()
    return text or None


def _header(columns: list[str]) -> list[RowError]:
    if [column.strip().lower() for column in columns[:2]] == ["cause", "effect"]:
        return []
    return [RowError(line=1, code="csv_header", message="expected the header cause,effect")]


#: One row of an edge-list CSV, registered by ``graphs.apps`` (``import_schemas``) as
#: ``graphs.edge``: a cause and an effect, each one flat name of at most
#: ``MAX_NAME_LENGTH`` characters; other columns are ignored. Rows have no id; the schema
#: numbers them.
MAX_NAME_LENGTH = 200
EDGE_SCHEMA = RowSchema(
    name="graphs.edge",
    description="One edge of a causal graph: cause, effect.",
    derived_id="row",
    extra_fields="ignore",
    fields=(
        FieldSpec(
            "cause",
            required=True,
            required_message="expected cause,effect",
            max_length=MAX_NAME_LENGTH,
        ),
        FieldSpec(
            "effect",
            required=True,
            required_message="expected cause,effect",
            max_length=MAX_NAME_LENGTH,
        ),
    ),
)


def _csv_edges(text: str) -> tuple[list[tuple[int, str, tuple[str, str]]], list[str]]:
    """The edges of a CSV edge list, read by the import core (``RecordReader``: line ends LF,
    CRLF or a lone CR, quoted cells over several lines) and checked by ``EDGE_SCHEMA``; each
    problem as ``line L: …``, a row's first only."""
    reader = RecordReader(
        io.BytesIO(text.encode("utf-8", "surrogatepass")),
        fmt="csv",
        header_check=_header,
        unnamed_columns="ignore",
        pad_short_rows=True,
    )
    edges: list[tuple[int, str, tuple[str, str]]] = []
    problems: list[str] = []
    try:
        for record in reader:
            if record.error is not None:
                problems.append(_located(record.error))
                continue
            if not any(cell.strip() for cell in record.data.values()):
                continue
            clean, errors = EDGE_SCHEMA.validate_row(record.data, record.line)
            if clean is None:
                problems.append(_located(errors[0]))
                continue
            line = record.line
            edges.append((line, f"line {line}", (clean["cause"].strip(), clean["effect"].strip())))
    except ImportFileError as refused:
        raise GraphInvalid([_located(refused.error)]) from None
    return edges, problems


def _located(error: RowError) -> str:
    """``line L: message`` (the core's reading messages lead with their place already)."""
    return (
        str(error) if error.message.startswith("line ") else f"line {error.line}: {error.message}"
    )


def parse_edge_list(data: bytes | str, filename: str = "") -> nx.DiGraph:
    try:
        text = decode_utf8(data) if isinstance(data, bytes) else data
    except ImportFileError as error:
        raise GraphInvalid([error.error.message]) from None
    stripped = text.lstrip()
    as_json = filename.lower().endswith(".json") or stripped.startswith(("[", "{"))
    edges: list[tuple[int, str, tuple[str | None, str | None]]] = []
    nodes: list[str | None] = []
    problems: list[str] = []
    if as_json:
        try:
            document = read_json_document(text, at_end="the file ends")
        except ImportFileError as error:
            raise GraphInvalid([f"not JSON the graph can use: {error.error.message}"]) from None
        raw_edges = document.get("edges", []) if isinstance(document, dict) else document
        if isinstance(document, dict):
            nodes = [_name(n) for n in document.get("nodes", [])]
            problems += [f"nodes[{i}]: empty name" for i, n in enumerate(nodes) if n is None]
        if not isinstance(raw_edges, list):
            raise GraphInvalid(["edges: expected a list"])
        for index, edge in enumerate(raw_edges):
            if isinstance(edge, dict):
                pair = (_name(edge.get("cause")), _name(edge.get("effect")))
            elif isinstance(edge, list | tuple) and len(edge) == 2:
                pair = (_name(edge[0]), _name(edge[1]))
            else:
                problems.append(f"edges[{index}]: expected [cause, effect]")
                continue
            if None in pair:
                problems.append(f"edges[{index}]: cause and effect must be named")
                continue
            edges.append((index, f"edges[{index}]", pair))
    else:
        named, problems = _csv_edges(text)
        edges.extend(named)
    dag = nx.DiGraph()
    dag.add_nodes_from(n for n in nodes if n is not None)
    for _, where, (cause, effect) in edges:
        if cause == effect:
            problems.append(f"{where}: {cause} causes itself")
            continue
        dag.add_edge(cause, effect)
    if problems:
        raise GraphInvalid(problems)
    if dag.number_of_nodes() < 2:
        raise GraphInvalid(["a graph needs at least two nodes"])
    if not nx.is_directed_acyclic_graph(dag):
        cycle = " → ".join(str(u) for u, _ in nx.find_cycle(dag))
        raise GraphInvalid([f"not acyclic: {cycle} → {nx.find_cycle(dag)[0][0]}"])
    return dag


def question_text(x: str, y: str, given: list[str]) -> str:
    if not given:
        return f"Are {x} and {y} d-separated?"
    names = given[0] if len(given) == 1 else ", ".join(given[:-1]) + " and " + given[-1]
    return f"Are {x} and {y} d-separated given {names}?"


ENUMERATE_AT_MOST = 5000


def _question(dag: nx.DiGraph, x: str, y: str, given: tuple[str, ...]) -> dict[str, Any]:
    answer = d_separated(dag, {x}, {y}, set(given))
    return {
        "x": x,
        "y": y,
        "given": list(given),
        "question": question_text(x, y, list(given)),
        "answer": "yes" if answer else "no",
    }


def _candidates(nodes: list[str], max_given: int) -> int:
    n = len(nodes)
    return math.comb(n, 2) * sum(math.comb(n - 2, k) for k in range(max_given + 1))


def _balanced(questions: list[dict[str, Any]], limit: int, rng: random.Random) -> list[dict]:
    yes = [q for q in questions if q["answer"] == "yes"]
    no = [q for q in questions if q["answer"] == "no"]
    rng.shuffle(yes)
    rng.shuffle(no)
    half = min(limit // 2, len(yes), len(no))
    chosen = yes[:half] + no[:half]
    rest = yes[half:] + no[half:]
    rng.shuffle(rest)
    chosen += rest[: limit - len(chosen)]
    rng.shuffle(chosen)
    return chosen


def dsep_questions(
    dag: nx.DiGraph, *, max_given: int = 1, limit: int | None = None, seed: int = 0
) -> list[dict[str, Any]]:
    """Questions on pairs of nodes with conditioning sets (disjoint from the pair) of up to
    ``max_given`` nodes, answered by networkx; with ``limit`` a seeded sample of that many, as
    many yes as no where possible. Each: {x, y, given, question, answer: "yes" | "no"}.

    Up to ENUMERATE_AT_MOST candidates every one is answered; on larger graphs (with a limit)
    candidates are drawn at random instead — 20 × limit of them at most — so a 50-node graph
    does not cost millions of d-separation tests."""
    nodes = sorted(dag.nodes, key=str)
    rng = random.Random(seed)
    if limit is None or _candidates(nodes, max_given) <= ENUMERATE_AT_MOST:
        questions = [
            _question(dag, x, y, given)
            for x, y in itertools.combinations(nodes, 2)
            for size in range(max_given + 1)
            for given in itertools.combinations([n for n in nodes if n not in (x, y)], size)
        ]
    else:
        seen: set[tuple[str, str, tuple[str, ...]]] = set()
        questions = []
        for _ in range(20 * limit):
            x, y = sorted(rng.sample(nodes, 2))
            others = [n for n in nodes if n not in (x, y)]
            given = tuple(sorted(rng.sample(others, rng.randint(0, min(max_given, len(others))))))
            if (x, y, given) not in seen:
                seen.add((x, y, given))
                questions.append(_question(dag, x, y, given))
    if limit is not None and limit < len(questions):
        questions = _balanced(questions, limit, rng)
    return questions


def edges_of(dag: nx.DiGraph) -> list[list[str]]:
    return sorted([[str(u), str(v)] for u, v in dag.edges])

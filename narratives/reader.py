"""Reading CausalNarratives files and narrative graphs (Django-free).

**Chains** (the benchmark's own format, ``real_world_graphs/narratives/<folder>/*.txt``): JSON
Lines, one object a line, ``{"nodes": [str, ...], "sentences": [str, ...]}``. ``nodes`` is a
causal chain in causal order (node *i* causes node *i + 1*); ``sentences`` has one sentence per
edge, so ``len(sentences) == len(nodes) - 1``. The folder says the narrative's direction
(``*_forward``: sentences in causal order, ``*_reverse``: in reverse order) and its source
(``real_world_*``: web sentences, ``semi_synthetic_*``: LLM-written). Files named
``…_narrative_size=N.txt`` hold the chains with N nodes; the semi-synthetic folders hold one file.

**Graphs** (Rungwise's own small format, for narratives of forks and colliders): JSON Lines, one
object a line, ``{"nodes": [str, ...], "edges": [[cause, effect], ...], "sentences": [str, ...]}``
with optional ``"id"``, ``"direction"`` (forward | reverse) and ``"source"`` (any short word).
Nodes are unique and non-empty, every edge joins two listed nodes, no self-loops, no repeated
edge, no cycle (checked by networkx through ``graphs.dsep.parse_edge_list``, the project's one DAG
rule), at least one sentence.

``read_narratives(path)`` reads a file or a directory tree of them into :class:`Narrative` s, or
reports every problem as :class:`Problem` (file and line): bad JSON (each line is read by the
imports' rules, ``imports.core.readers.read_json_document``: nested at most
``annotation.values.MAX_DEPTH`` levels, no NUL or unpaired surrogate in any text; a file in
UTF-8, read by ``imports.core.readers.decode_utf8``, which names the first other byte by line,
column and offset), a line that is not an
object, empty or duplicate nodes, ``len(sentences) != len(nodes) - 1`` (chains), bad edges
(graphs), empty sentences. The caller imports nothing when there is any problem.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# One "file:line: message" problem type for the benchmark readers (CARL-GT's and this one).
from graphs.carlgt import Problem
from imports.core.readers import ImportFileError, decode_utf8, read_json_document

DIRECTIONS = ("forward", "reverse")
_FOLDER = re.compile(r"^(?P<source>[a-z_]+?)_(?P<direction>forward|reverse)$")
_SIZE = re.compile(r"size=(\d+)")
#: Files read in a directory: the benchmark's .txt and Rungwise's .jsonl.
SUFFIXES = (".txt", ".jsonl")


@dataclass(frozen=True)
class Narrative:
    """One narrative: a chain (``edges`` empty, ``nodes`` in causal order) or a graph."""

    structure: str  # "chain" | "graph"
    nodes: tuple[str, ...]
    edges: tuple[tuple[str, str], ...]
    sentences: tuple[str, ...]
    direction: str  # "forward" | "reverse" | "" (unknown)
    source: str  # "real_world" | "semi_synthetic" | the graph file's word | ""
    file: str  # relative to the directory read
    line: int  # 1-based
    folder: str = ""
    narrative_id: str = ""

    @property
    def length(self) -> int:
        return len(self.nodes)

    @property
    def true_edges(self) -> list[list[str]]:
        if self.structure == "chain":
            return [[a, b] for a, b in zip(self.nodes, self.nodes[1:], strict=False)]
        return [list(edge) for edge in self.edges]

    @property
    def external_id(self) -> str:
        """An opaque id (``cn-`` and 12 hex digits of the key's SHA-256): item screens show the
        external id, and the key names the folder, i.e. the narrative's direction."""
        return "cn-" + hashlib.sha256(self.key.encode()).hexdigest()[:12]

    @property
    def key(self) -> str:
        """Where the narrative comes from, readable: ``<folder>-size<n>-l<line>`` or
        ``graph-<id>`` (researchers' pages and releases; never shown to annotators)."""
        if self.narrative_id:
            return f"graph-{self.narrative_id}"
        stem = self.folder or Path(self.file).parent.name or "narratives"
        size = _SIZE.search(Path(self.file).name)
        part = f"-size{size.group(1)}" if size else ""
        return f"{stem}{part}-l{self.line}"


@dataclass
class Reading:
    narratives: list[Narrative] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for narrative in self.narratives:
            key = narrative.folder or narrative.structure
            counts[key] = counts.get(key, 0) + 1
        return counts


def folder_meta(folder: str) -> tuple[str, str]:
    """(source, direction) from a benchmark folder name such as ``real_world_reverse``."""
    match = _FOLDER.match(folder)
    if not match:
        return "", ""
    return match.group("source"), match.group("direction")


def _names(value: Any, what: str, problems: list[str]) -> list[str]:
    if not isinstance(value, list):
        problems.append(f"{what} must be a list of strings")
        return []
    names = []
    for index, name in enumerate(value):
        if not isinstance(name, str) or not name.strip():
            problems.append(f"{what}[{index}] is empty or not a string")
        else:
            names.append(name.strip())
    return names


def parse_record(record: Any, *, file: str, line: int, folder: str = "") -> Narrative | list[str]:
    """One line's object as a Narrative, or the list of its problems."""
    if not isinstance(record, dict):
        return ['expected a JSON object {"nodes": […], "sentences": […]}']
    problems: list[str] = []
    if "nodes" not in record:
        return ['no "nodes"']
    nodes = _names(record.get("nodes"), "nodes", problems)
    if isinstance(record.get("nodes"), list) and not record["nodes"]:
        problems.append("nodes is empty")
    seen: set[str] = set()
    for name in nodes:
        if name in seen:
            problems.append(f"duplicate node {name!r}")
        seen.add(name)
    sentences = _names(record.get("sentences"), "sentences", problems)
    is_graph = "edges" in record
    edges: list[tuple[str, str]] = []
    if is_graph:
        raw = record["edges"]
        if not isinstance(raw, list):
            problems.append("edges must be a list of [cause, effect]")
            raw = []
        for index, edge in enumerate(raw):
            if not (
                isinstance(edge, list)
                and len(edge) == 2
                and all(isinstance(n, str) and n.strip() for n in edge)
            ):
                problems.append(f"edges[{index}] must be [cause, effect] (two node names)")
                continue
            pair = (edge[0].strip(), edge[1].strip())
            unknown = [n for n in pair if n not in seen]
            if unknown:
                problems.append(f"edges[{index}] names {', '.join(map(repr, unknown))}, not a node")
            elif pair in edges:
                problems.append(f"edges[{index}] repeats {pair[0]} → {pair[1]}")
            else:
                edges.append(pair)
        if not sentences and isinstance(record.get("sentences"), list):
            problems.append("sentences is empty")
        if not problems:
            from graphs.dsep import GraphInvalid, parse_edge_list

            try:
                parse_edge_list(json.dumps({"nodes": nodes, "edges": edges}), "g.json")
            except GraphInvalid as error:
                problems.extend(error.problems)
    elif nodes and isinstance(record.get("sentences"), list):
        if len(record["sentences"]) != len(record["nodes"]) - 1:
            problems.append(
                f"{len(record['sentences'])} sentences for {len(record['nodes'])} nodes "
                f"(a chain of n nodes has n − 1 sentences, one per edge)"
            )
        if len(nodes) < 2 and not problems:
            problems.append("a chain needs at least two nodes")
    if problems:
        return problems
    source, direction = folder_meta(folder)
    if is_graph:
        direction = str(record.get("direction") or "").strip()
        if direction and direction not in DIRECTIONS:
            return [f"direction must be forward or reverse (got {direction!r})"]
        source = str(record.get("source") or "graph").strip()[:40]
    narrative_id = str(record.get("id") or "").strip() if is_graph else ""
    if is_graph and narrative_id and not re.fullmatch(r"[A-Za-z0-9_.-]{1,80}", narrative_id):
        return [f"id {narrative_id!r}: letters, digits, . _ - only"]
    if is_graph and not narrative_id:
        narrative_id = f"{Path(file).stem}-{line}"
        narrative_id = re.sub(r"[^A-Za-z0-9_.-]", "_", narrative_id)
    return Narrative(
        structure="graph" if is_graph else "chain",
        nodes=tuple(nodes),
        edges=tuple(edges),
        sentences=tuple(sentences),
        direction=direction,
        source=source,
        file=file,
        line=line,
        folder=folder,
        narrative_id=narrative_id,
    )


def read_lines(text: str, *, file: str, folder: str = "") -> Reading:
    """Every line of one file's text (blank lines are skipped)."""
    reading = Reading()
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record = read_json_document(raw, at_end="the line ends", first_line=number)
        except ImportFileError as refused:
            error = refused.error
            cause = f"not JSON: {error.message}" if error.column else error.message
            reading.problems.append(Problem(file, number, cause))
            continue
        parsed = parse_record(record, file=file, line=number, folder=folder)
        if isinstance(parsed, Narrative):
            reading.narratives.append(parsed)
        else:
            reading.problems.extend(Problem(file, number, message) for message in parsed)
    return reading


def read_narratives(path: str | Path) -> Reading:
    """Every narrative in a file, or in every ``.txt`` / ``.jsonl`` file under a directory (in
    sorted order). A file's folder name gives the benchmark's direction and source."""
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such file or directory")
    files = (
        [root]
        if root.is_file()
        else sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
    )
    reading = Reading()
    for file in files:
        name = str(file.relative_to(root)) if root.is_dir() else file.name
        try:
            # The imports' encoding rule, as for an upload (narratives.services): the first
            # byte that is not UTF-8 named by line, column and offset.
            text = decode_utf8(file.read_bytes())
        except ImportFileError as refused:
            reading.problems.append(Problem(name, None, refused.error.message))
            continue
        part = read_lines(text, file=name, folder=file.parent.name)
        reading.narratives.extend(part.narratives)
        reading.problems.extend(part.problems)
    if not files:
        reading.problems.append(Problem(str(root), None, "no .txt or .jsonl files"))
    return reading


def humanise(node: str) -> str:
    """``loss_of_productivity`` → ``Loss of productivity``: the event card's label."""
    text = re.sub(r"[_\s]+", " ", node).strip()
    return text[:1].upper() + text[1:]

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
reports every problem as :class:`Problem` (file and line). Files are read by the import core one
line at a time (``imports.core.readers.physical_lines``: UTF-8, the first other byte named by
line, column and offset; line ends LF, CRLF or a lone CR), each line one JSON document
(``read_json_document``: nested at most ``annotation.values.MAX_DEPTH`` levels, no NUL or
unpaired surrogate in any text), checked by the registered schema ``NARRATIVE_SCHEMA`` (a line
that is not an object, no nodes, empty or duplicate nodes, ``len(sentences) != len(nodes) - 1``
(chains), bad edges (graphs), empty sentences, a value nested where a flat one belongs). The
caller imports nothing when there is any problem.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

# One "file:line: message" problem type for the benchmark readers (CARL-GT's and this one).
from graphs.carlgt import Problem
from imports.core.readers import ImportFileError, physical_lines, read_json_document
from imports.core.schema import FieldSpec, RowSchema

#: ``(field, message)`` problems of one record (``RowSchema.record_checks``).
Problems = list[tuple[str | None, str]]

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


def _names(value: Any, what: str, problems: Problems) -> list[str]:
    if not isinstance(value, list):
        problems.append((what, f"{what} must be a list of strings"))
        return []
    names = []
    for index, name in enumerate(value):
        if not isinstance(name, str) or not name.strip():
            problems.append((what, f"{what}[{index}] is empty or not a string"))
        else:
            names.append(name.strip())
    return names


def _edges(raw: Any, nodes: set[str], problems: Problems) -> list[tuple[str, str]]:
    if not isinstance(raw, list):
        problems.append(("edges", "edges must be a list of [cause, effect]"))
        return []
    edges: list[tuple[str, str]] = []
    for index, edge in enumerate(raw):
        if not (
            isinstance(edge, list)
            and len(edge) == 2
            and all(isinstance(n, str) and n.strip() for n in edge)
        ):
            problems.append(("edges", f"edges[{index}] must be [cause, effect] (two node names)"))
            continue
        pair = (edge[0].strip(), edge[1].strip())
        unknown = [n for n in pair if n not in nodes]
        if unknown:
            problems.append(
                ("edges", f"edges[{index}] names {', '.join(map(repr, unknown))}, not a node")
            )
        elif pair in edges:
            problems.append(("edges", f"edges[{index}] repeats {pair[0]} → {pair[1]}"))
        else:
            edges.append(pair)
    return edges


def _structure(clean: Mapping[str, Any]) -> Problems:
    """The record check of ``NARRATIVE_SCHEMA``: nodes, sentences and (graphs) edges."""
    problems: Problems = []
    nodes = _names(clean["nodes"], "nodes", problems)
    if isinstance(clean["nodes"], list) and not clean["nodes"]:
        problems.append(("nodes", "nodes is empty"))
    seen: set[str] = set()
    for name in nodes:
        if name in seen:
            problems.append(("nodes", f"duplicate node {name!r}"))
        seen.add(name)
    sentences = _names(clean.get("sentences"), "sentences", problems)
    if "edges" in clean:
        edges = _edges(clean["edges"], seen, problems)
        if not sentences and isinstance(clean.get("sentences"), list):
            problems.append(("sentences", "sentences is empty"))
        if not problems:
            from graphs.dsep import GraphInvalid, parse_edge_list

            try:
                parse_edge_list(json.dumps({"nodes": nodes, "edges": edges}), "g.json")
            except GraphInvalid as error:
                problems.extend(("edges", problem) for problem in error.problems)
        return problems or _graph_fields(clean)
    if nodes and isinstance(clean.get("sentences"), list):
        if len(clean["sentences"]) != len(clean["nodes"]) - 1:
            problems.append(
                (
                    "sentences",
                    f"{len(clean['sentences'])} sentences for {len(clean['nodes'])} nodes "
                    f"(a chain of n nodes has n − 1 sentences, one per edge)",
                )
            )
        if len(nodes) < 2 and not problems:
            problems.append(("nodes", "a chain needs at least two nodes"))
    return problems


def _graph_fields(clean: Mapping[str, Any]) -> Problems:
    direction = str(clean.get("direction") or "").strip()
    if direction and direction not in DIRECTIONS:
        return [("direction", f"direction must be forward or reverse (got {direction!r})")]
    narrative_id = str(clean.get("id") or "").strip()
    if narrative_id and not re.fullmatch(r"[A-Za-z0-9_.-]{1,80}", narrative_id):
        return [("id", f"id {narrative_id!r}: letters, digits, . _ - only")]
    return []


#: One line of a narratives file, registered by ``narratives.apps`` (``import_schemas``) as
#: ``narratives.narrative``. Lines have no id column: a narrative's id comes from where it is
#: (``Narrative.key``), so the schema numbers rows. Chains and graphs share it: ``edges``
#: present makes a graph, whose ``id``, ``direction`` and ``source`` are read; other keys are
#: ignored.
NARRATIVE_SCHEMA = RowSchema(
    name="narratives.narrative",
    description="One narrative: a causal chain (nodes in causal order) or a graph with edges.",
    derived_id="row",
    extra_fields="ignore",
    # Examples: a chain of three events (the sample file, imports.views); a graph's fields
    # are left out of it (example=None: ``edges`` alone makes a line a graph).
    fields=(
        FieldSpec(
            "nodes",
            "json",
            required=True,
            required_message='no "nodes"',
            help="Event names; a chain lists them in causal order.",
            example=(
                ["heavy_rain", "flooded_road", "missed_train"],
                ["power_cut", "warm_freezer", "spoiled_food"],
            ),
        ),
        FieldSpec(
            "sentences",
            "json",
            help="One sentence per edge (chains), at least one.",
            example=(
                ["Heavy rain flooded the road.", "The flooded road made her miss the train."],
                ["A power cut warmed the freezer.", "The warm freezer spoiled the food."],
            ),
        ),
        FieldSpec(
            "edges", "json", help="[cause, effect] pairs: the narrative is a graph.", example=None
        ),
        FieldSpec("id", max_length=80, help="A graph's id: letters, digits, . _ -.", example=None),
        FieldSpec("direction", help="A graph's sentence order.", allowed=DIRECTIONS, example=None),
        FieldSpec("source", help="A short word (graphs).", example=None),
    ),
    record_checks=(_structure,),
)


def parse_record(record: Any, *, file: str, line: int, folder: str = "") -> Narrative | list[str]:
    """One line's object as a Narrative, or the list of its problems (``NARRATIVE_SCHEMA``)."""
    if not isinstance(record, dict):
        return ['expected a JSON object {"nodes": […], "sentences": […]}']
    clean, errors = NARRATIVE_SCHEMA.validate_row(record, line)
    if clean is None:
        return [error.message for error in errors]
    problems: Problems = []
    nodes = _names(clean["nodes"], "nodes", problems)
    sentences = _names(clean.get("sentences"), "sentences", problems)
    is_graph = "edges" in clean
    edges = _edges(clean["edges"], set(nodes), problems) if is_graph else []
    source, direction = folder_meta(folder)
    narrative_id = ""
    if is_graph:
        direction = str(clean.get("direction") or "").strip()
        source = str(clean.get("source") or "graph").strip()[:40]
        narrative_id = str(clean.get("id") or "").strip()
        if not narrative_id:
            narrative_id = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{Path(file).stem}-{line}")
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


def read_lines(text: str | bytes | IO[bytes], *, file: str, folder: str = "") -> Reading:
    """Every line of one file (text, bytes or a binary file object; blank lines are skipped),
    read one line at a time by the import core (``imports.core.readers.physical_lines``:
    UTF-8, line ends LF, CRLF or a lone CR); each line one JSON document
    (``read_json_document``) checked by ``NARRATIVE_SCHEMA``. A byte that is not UTF-8 is one
    problem and the file gives no narratives."""
    reading = Reading()
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogatepass")
    fileobj = io.BytesIO(text) if isinstance(text, bytes) else text
    try:
        for number, raw in physical_lines(fileobj):
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
    except ImportFileError as refused:
        return Reading(problems=[Problem(file, None, refused.error.message)])
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
        with file.open("rb") as handle:
            part = read_lines(handle, file=name, folder=file.parent.name)
        reading.narratives.extend(part.narratives)
        reading.problems.extend(part.problems)
    if not files:
        reading.problems.append(Problem(str(root), None, "no .txt or .jsonl files"))
    return reading


def humanise(node: str) -> str:
    """``loss_of_productivity`` → ``Loss of productivity``: the event card's label."""
    text = re.sub(r"[_\s]+", " ", node).strip()
    return text[:1].upper() + text[1:]

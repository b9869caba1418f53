"""CARL-GT projects: the workflow's template, the benchmark's import, generated d-separation
question sets and the scores of people's answers (CONTRIBUTING.md: writes here, reads in
selectors-like functions at the bottom)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from annotation import api as engine
from annotation.eligibility import blind
from annotation.errors import ApplicationError
from annotation.models import Annotation, Project
from graphs import scoring
from graphs.carlgt import NUMBER_TASKS, TASKS, YES_NO_TASKS, Reading, read_carlgt
from graphs.dsep import GraphInvalid, dsep_questions, edges_of, parse_edge_list

WORKFLOW = "carlgt"
KIND = "graph_question"
SMALL_GRAPH_MAX_NODES = 10
#: Bounds of a generation request (the Graphs tab's form and the API).
MAX_EDGE_LIST_BYTES = 1 << 20
MAX_GIVEN = 3
MAX_QUESTIONS = 5000
GUIDELINES = """Each question is about a causal graph or about data generated from one.

* Yes / no questions (d-separation, conditional independence, causal direction): press y or n.
* Number questions (intervention, counterfactual expectations): type the number, press Enter.

When the graph is drawn, the two variables asked about are yellow and those conditioned on blue.
Answer from the graph alone; no answer is ever shown."""


def carlgt_project_create(
    *, slug: str, name: str, description: str = "", overlap: int = 3, seed: int | None = None
) -> Project:
    """A CARL-GT project: one stage where ``overlap`` people answer each question."""
    project = engine.project_create(
        slug=slug, name=name, kind=WORKFLOW, description=description, guidelines=GUIDELINES
    )
    seeded: dict[str, Any] = {"seed": seed} if seed is not None else {}
    engine.stage_create(
        project=project,
        slug="answer",
        name="Answer the questions",
        kind=KIND,
        overlap=overlap,
        resolution_policy="graph_record",
        routes={"accept": {"action": "finish"}},
        eligibility=[blind()],  # a human baseline: blind to any earlier work on the item
        instructions="y / n for yes or no; a number then Enter.",
        **seeded,
    )
    return project


def _check_project(project: Project) -> None:
    if project.kind != WORKFLOW:
        raise ApplicationError(
            f"{project.name} is not a CARL-GT project (kind {project.kind!r}).",
            {"project": project.slug},
        )


@dataclass
class ImportReport:
    created: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def carlgt_rows(reading: Reading) -> list[dict[str, Any]]:
    return [
        {
            "external_id": record.external_id,
            "group": f"{record.task}-{record.graph_id}",
            "source": "CARL-GT",
            "payload": {
                "question": record.question,
                "task": record.task,
                "answer_type": record.answer_type,
                "answer": record.answer,
                "graph_id": str(record.graph_id),
                "graph_size": record.graph_size,
                "source_file": record.file,
                "source_line": record.line,
            },
        }
        for record in reading.records
    ]


def carlgt_import(*, project: Project, directory: str | Path) -> ImportReport:
    """Every CARL-GT question under ``directory`` as an item, or — on any problem (mismatched
    line counts, an empty line, an answer that does not parse, a question already imported) —
    nothing, with every problem by file and line."""
    _check_project(project)
    try:
        reading = read_carlgt(directory)
    except FileNotFoundError as error:
        return ImportReport(problems=[str(error)])
    report = ImportReport(counts=reading.counts(), skipped=list(reading.skipped))
    if not reading.ok:
        report.problems = [str(problem) for problem in reading.problems]
        return report
    try:
        with transaction.atomic():
            items = engine.items_create(project=project, rows=carlgt_rows(reading))
    except ApplicationError as error:
        report.problems = [error.message]
        return report
    report.created = len(items)
    return report


#: Problems listed for a refused question file (the rest are counted).
PROBLEMS_SHOWN = 200


def carlgt_file_import(*, project: Project, fileobj: Any, filename: str) -> ImportReport:
    """A file of CARL-GT questions (CSV, JSON Lines or a JSON array; one ``QUESTION_SCHEMA``
    row each, read by the import core) as items through the benchmark import's own rows
    (``carlgt_rows``), or — on any problem (a task outside the benchmark's five, an answer of
    the wrong kind for its task, a missing field, an unknown column, a question already
    imported or given twice) — nothing, with every problem as ``file:line: field: what to
    fix``."""
    from graphs.carlgt import QUESTION_SCHEMA, Problem, question_record
    from imports.core.readers import ImportFileError, RecordReader

    _check_project(project)
    reading = Reading()
    rows: list[int] = []  # the file's line of each record
    try:
        reader = RecordReader(fileobj, filename=filename)
        for raw in reader:
            if raw.error is not None:
                reading.problems.append(Problem(filename, raw.line, raw.error.message))
                continue
            clean, errors = QUESTION_SCHEMA.validate_row(
                raw.data, raw.line, index=raw.index, text_values=raw.text_values
            )
            if clean is None:
                reading.problems.extend(
                    Problem(filename, raw.line, f"{error.field}: {error.message}")
                    if error.field and f'"{error.field}"' not in error.message
                    else Problem(filename, raw.line, error.message)
                    for error in errors
                )
                continue
            reading.records.append(question_record(clean, file=filename, row=raw.line))
            rows.append(raw.line)
    except (ValueError, ImportFileError) as refused:
        message = refused.error.message if isinstance(refused, ImportFileError) else str(refused)
        return ImportReport(problems=[f"{filename}: {message}"])
    seen: dict[str, int] = {}
    for record, row in zip(reading.records, rows, strict=True):
        if record.external_id in seen:
            reading.problems.append(
                Problem(
                    filename,
                    row,
                    f"line: question {record.external_id} is also on line "
                    f"{seen[record.external_id]}; give each its own line number",
                )
            )
        seen.setdefault(record.external_id, row)
    if not reading.records and not reading.problems:
        reading.problems.append(Problem(filename, None, "no questions in the file"))
    report = ImportReport(counts=reading.counts())
    if not reading.ok:
        report.problems = [str(problem) for problem in reading.problems[:PROBLEMS_SHOWN]]
        return report
    try:
        with transaction.atomic():
            items = engine.items_create(project=project, rows=carlgt_rows(reading))
    except ApplicationError as error:
        report.problems = [error.message]
        return report
    report.created = len(items)
    return report


def generated_id(graph_name: str, number: int) -> str:
    """The external id of the ``number``-th question generated on a graph."""
    return f"gen-{graph_name}-{number}"


def dsep_generate(
    *,
    project: Project,
    data: bytes | str,
    filename: str = "",
    graph_name: str,
    max_given: int = 1,
    limit: int | None = 20,
    seed: int = 0,
) -> int:
    """Parse an edge list (CSV ``cause,effect`` or JSON), generate d-separation questions on
    it with networkx's answers and add them as items; ApplicationError naming every problem of
    the file otherwise. Returns the number of questions added."""
    _check_project(project)
    name = (graph_name or "").strip()
    if not name or not name.replace("-", "").replace("_", "").isalnum():
        raise ApplicationError(
            "Name the graph with letters, digits, - or _.", {"graph_name": "e.g. smoking"}
        )
    try:
        dag = parse_edge_list(data, filename)
    except GraphInvalid as error:
        raise ApplicationError(
            f"The edge list cannot be used: {error}", {"edges": error.problems[:50]}
        ) from None
    edges = edges_of(dag)
    nodes = sorted(str(n) for n in dag.nodes)
    size = "small" if len(nodes) <= SMALL_GRAPH_MAX_NODES else "large"
    rows = []
    for number, q in enumerate(
        dsep_questions(dag, max_given=max_given, limit=limit, seed=seed), start=1
    ):
        rows.append(
            {
                "external_id": generated_id(name, number),
                "group": f"d_separation-{name}",
                "source": "generated",
                "payload": {
                    "question": q["question"],
                    "task": "d_separation",
                    "answer_type": "yes_no",
                    "answer": q["answer"],
                    "graph_id": name,
                    "graph_size": size,
                    "nodes": nodes,
                    "edges": edges,
                    "x": q["x"],
                    "y": q["y"],
                    "given": q["given"],
                },
            }
        )
    with transaction.atomic():
        return len(engine.items_create(project=project, rows=rows))


# --- Scores ------------------------------------------------------------------------------------


def _answers(project: Project):
    return (
        Annotation.objects.filter(item_stage__stage__project=project, item_stage__stage__kind=KIND)
        .values_list("item_stage__item_id", "item_stage__item__payload", "payload")
        .order_by("item_stage__item_id", "pk")
    )


def score_rows(answers) -> list[dict[str, Any]]:
    """Rows of (task, graph size) with n questions, n answers and the paper's metrics, from
    (item id, item payload, annotation payload) triples. Accuracy and F1 over every answer;
    ROC-AUC over questions with the share of yes as the score; MAE over every number answer."""
    groups: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {"truth": [], "said": [], "items": defaultdict(list), "item_truth": {}}
    )
    for item_id, item_payload, payload in answers:
        value, truth = (payload or {}).get("value"), item_payload.get("answer")
        if value is None or truth is None:
            continue
        group = groups[(item_payload.get("task", "?"), item_payload.get("graph_size", "?"))]
        if item_payload.get("task") in NUMBER_TASKS:
            group["truth"].append(float(truth))
            group["said"].append(float(value))
        else:
            group["truth"].append(truth == "yes")
            group["said"].append(value == "yes")
            group["items"][item_id].append(value == "yes")
            group["item_truth"][item_id] = truth == "yes"
    rows = []
    order = list(TASKS)
    for (task, size), group in sorted(
        groups.items(), key=lambda g: (order.index(g[0][0]) if g[0][0] in order else 99, g[0][1])
    ):
        row = {
            "task": task,
            "task_label": TASKS.get(task, task),
            "graph_size": size,
            "answers": len(group["truth"]),
            "questions": len(group["items"]) if task not in NUMBER_TASKS else None,
            "accuracy": None,
            "f1": None,
            "roc_auc": None,
            "mae": None,
        }
        if task in NUMBER_TASKS:
            row["mae"] = scoring.mean_absolute_error(group["truth"], group["said"])
        else:
            row["accuracy"] = scoring.accuracy(group["truth"], group["said"])
            row["f1"] = scoring.f1(group["truth"], group["said"])
            ids = list(group["items"])
            row["roc_auc"] = scoring.roc_auc(
                [group["item_truth"][i] for i in ids],
                [sum(group["items"][i]) / len(group["items"][i]) for i in ids],
            )
        rows.append(row)
    return rows


def project_scores(project: Project) -> list[dict[str, Any]]:
    return score_rows(_answers(project))


def question_counts(project: Project) -> list[dict[str, Any]]:
    """Questions per (task, graph size) in the project, answered or not."""
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for payload in project.items.values_list("payload", flat=True).iterator():
        counts[(payload.get("task", "?"), payload.get("graph_size", "?"))] += 1
    order = list(TASKS)
    return [
        {"task": task, "task_label": TASKS.get(task, task), "graph_size": size, "count": n}
        for (task, size), n in sorted(
            counts.items(), key=lambda c: (order.index(c[0][0]) if c[0][0] in order else 99, c[0])
        )
    ]


def agreement_rows(answers) -> list[dict[str, Any]]:
    """Fleiss' κ with its 95 % interval (agreement.stats.fleiss_kappa: Gwet's analytic SE, his
    generalisation when questions have different numbers of answers) among the people who
    answered the same yes / no questions, per task and graph size and over every yes / no
    question ("all"), from the same (item id, item payload, annotation payload) triples as
    score_rows. κ is undefined (None, with the reason) while no question has two answers or
    every answer is the same."""
    import pandas as pd

    from agreement.stats import fleiss_kappa

    groups: dict[tuple[str, str], list[tuple[Any, str]]] = defaultdict(list)
    for item_id, item_payload, payload in answers:
        value = (payload or {}).get("value")
        task = item_payload.get("task")
        if task not in YES_NO_TASKS or value not in ("yes", "no"):
            continue
        groups[(task, item_payload.get("graph_size", "?"))].append((item_id, value))
        groups[("all", "all")].append((item_id, value))
    order = [*YES_NO_TASKS, "all"]
    rows = []
    for (task, size), pairs in sorted(
        groups.items(), key=lambda g: (order.index(g[0][0]), g[0][1])
    ):
        frame = pd.DataFrame(pairs, columns=["item", "value"])
        result = fleiss_kappa(frame, categories=["no", "yes"])
        rows.append(
            {
                "task": task,
                "task_label": TASKS.get(task, "every yes / no question"),
                "graph_size": size,
                "kappa": result.value,
                "low": result.ci_low,
                "high": result.ci_high,
                "items": int((frame.groupby("item").size() >= 2).sum()),
                "answers": len(frame),
                "note": result.note or "",
            }
        )
    return rows


def project_agreement(project: Project) -> list[dict[str, Any]]:
    return agreement_rows(_answers(project))

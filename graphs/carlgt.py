"""Reading CARL-GT's line-aligned question and answer files (Django-free).

The benchmark (CauTabBench, folder ``carl_gt/``) ships plain text: line *k* of a questions file
pairs with line *k* of its answers file. ``read_carlgt(directory)`` reads all of it into
:class:`Record` s, or reports every problem by file and line (mismatched line counts, empty
lines, answers that are neither yes/no nor numbers) — the caller imports nothing when there is
any. Files are read by the import core (``imports.core.readers.physical_lines``: UTF-8, the
first other byte named by line and column; line ends LF, CRLF or a lone CR); each line pair is
checked by a registered schema (``YES_NO_SCHEMA``, ``NUMBER_SCHEMA``). The layout (``directory`` is ``carl_gt/data`` or its parent ``carl_gt``):

* ``graph/{id}_questions.txt`` + ``graph/{id}_answers.txt``: d-separation, ``yes``/``no``;
* ``table/{id}_questions.txt`` + ``table/{id}_answers.txt``: conditional independence, yes/no;
* ``table/cdir_{id}_questions.txt``: causal direction; no answers file, every answer is yes
  (the benchmark's README);
* ``table/intervention_{id}_gt.txt``: expected values (numbers) paired with
  ``table/intervention_{id}_questions.txt`` when present, otherwise, for the large graphs
  (ids below 100), with the one shared ``table/intervention_questions.txt``; small graphs'
  values have no question text and are listed as skipped, never guessed;
* ``table/counterfactual_questions_{id}.txt`` + ``table/counterfactual_answers_{id}.txt``:
  expected values (numbers). The unnumbered ``counterfactual_questions.txt`` belongs to no
  graph and is listed as skipped.

Graph ids 1–10 are the large graphs, 100–109 the small ones (``graph_size``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imports.core.readers import ImportFileError, physical_lines
from imports.core.schema import FieldSpec, RowSchema

TASKS = {
    "d_separation": "d-separation",
    "conditional_independence": "conditional independence",
    "causal_direction": "causal direction",
    "intervention": "intervention",
    "counterfactual": "counterfactual",
}
YES_NO_TASKS = ("d_separation", "conditional_independence", "causal_direction")
NUMBER_TASKS = ("intervention", "counterfactual")
SMALL_GRAPH_MIN_ID = 100
_VARIABLE = re.compile(r"\bV(\d+)\b")


@dataclass(frozen=True)
class Record:
    task: str
    graph_id: int
    file: str  # the questions file, relative to the data directory
    line: int  # 1-based
    question: str
    answer: str | float  # "yes" / "no", or a number

    @property
    def graph_size(self) -> str:
        return "small" if self.graph_id >= SMALL_GRAPH_MIN_ID else "large"

    @property
    def external_id(self) -> str:
        return f"carlgt-{self.task}-{self.graph_id}-{self.line}"

    @property
    def answer_type(self) -> str:
        return "number" if self.task in NUMBER_TASKS else "yes_no"


@dataclass(frozen=True)
class Problem:
    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.message}"


@dataclass
class Reading:
    records: list[Record] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # files read but not imported, and why

    @property
    def ok(self) -> bool:
        return not self.problems

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for record in self.records:
            out[record.task] = out.get(record.task, 0) + 1
        return out


def data_directory(directory: str | Path) -> Path:
    """``carl_gt/data`` given it or any parent that holds ``carl_gt/data`` or ``data``."""
    root = Path(directory)
    for candidate in (root, root / "data", root / "carl_gt" / "data"):
        if (candidate / "graph").is_dir() or (candidate / "table").is_dir():
            return candidate
    raise FileNotFoundError(f"{root}: no graph/ or table/ folder of CARL-GT found")


def _lines(path: Path, base: Path, reading: Reading) -> list[str] | None:
    """The lines of a text file read by the import core (``physical_lines``: UTF-8, line ends
    LF, CRLF or a lone CR), or None with the problem added."""
    try:
        with path.open("rb") as handle:
            return [text for _, text in physical_lines(handle)]
    except ImportFileError as refused:
        reading.problems.append(Problem(_rel(path, base), None, refused.error.message))
        return None


def _rel(path: Path, base: Path) -> str:
    return path.relative_to(base).as_posix()


def _yes_no(raw: str) -> str | None:
    value = raw.strip().lower()
    return value if value in ("yes", "no") else None


def _number(raw: str) -> float | None:
    try:
        value = float(raw.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _answer_check(parse: Any, expected: str) -> Any:
    def check(raw: str) -> str | None:
        return None if parse(raw) is not None else f"expected {expected}, got {raw!r}"

    return check


def _line_schema(name: str, parse: Any, expected: str) -> RowSchema:
    return RowSchema(
        name=name,
        description=f"Line k of a questions file with line k of its answers file ({expected}).",
        derived_id="row",
        extra_fields="reject",
        fields=(
            FieldSpec("question", required=True, required_message="empty question"),
            FieldSpec(
                "answer",
                required=True,
                required_message="empty answer",
                check=_answer_check(parse, expected),
            ),
        ),
    )


#: One question with its answer, registered by ``graphs.apps`` (``import_schemas``): the
#: yes/no tasks and the tasks answered with a number. Lines have no id; the schema numbers
#: them (``Record.external_id`` adds the task and graph).
YES_NO_SCHEMA = _line_schema("graphs.carlgt_yes_no", _yes_no, "yes or no")
NUMBER_SCHEMA = _line_schema("graphs.carlgt_number", _number, "a number")


def _question_answer(clean: Any) -> list[tuple[str | None, str]]:
    """The record check of ``QUESTION_SCHEMA``: the answer a question's task takes."""
    task, raw = clean["task"], clean["answer"]
    if task in NUMBER_TASKS:
        if _number(str(raw)) is None:
            return [("answer", f"a {TASKS[task]} question is answered with a number, not {raw!r}")]
    elif _yes_no(str(raw)) is None:
        return [("answer", f"a {TASKS[task]} question is answered yes or no, not {raw!r}")]
    return []


#: One question per row, with its answer: the browser's import of CARL-GT questions
#: (``graphs.services.carlgt_file_import``), a CSV or JSON Lines file of the rows the
#: benchmark's line-aligned files hold (``read_carlgt``). Registered by ``graphs.apps``; the
#: Import page's column table and sample file come from its fields' examples.
QUESTION_SCHEMA = RowSchema(
    name="graphs.carlgt_question",
    description="One CARL-GT question a row, with its task, graph and known answer.",
    derived_id="row",
    extra_fields="reject",
    fields=(
        FieldSpec(
            "task",
            "choice",
            required=True,
            choices=tuple(TASKS),
            help="d-separation, independence and direction take yes / no; the others a number.",
            example=("d_separation", "intervention"),
        ),
        FieldSpec(
            "graph_id",
            "int",
            required=True,
            min=0,
            help=f"The graph's number: below {SMALL_GRAPH_MIN_ID} large, from it small.",
            example=(1, SMALL_GRAPH_MIN_ID),
        ),
        FieldSpec(
            "question",
            required=True,
            max_length=20_000,
            help="The question as annotators read it.",
            example=(
                "Are V1 and V4 d-separated given V2?",
                "What is the expected value of V3 if V1 is set to 1?",
            ),
        ),
        FieldSpec(
            "answer",
            required=True,
            help="yes / no, or a number (never shown to annotators).",
            allowed=("yes", "no", "a number"),
            example=("yes", "2.5"),
        ),
        FieldSpec(
            "line",
            "int",
            min=1,
            help="Its line in the benchmark's questions file (the question's id); the row's "
            "number when empty.",
            example=None,
        ),
    ),
    record_checks=(_question_answer,),
)


SCHEMAS = {schema.name: schema for schema in (YES_NO_SCHEMA, NUMBER_SCHEMA, QUESTION_SCHEMA)}


def question_record(clean: Any, *, file: str, row: int) -> Record:
    """A ``QUESTION_SCHEMA`` row (checked) as a Record: the benchmark's reader's unit."""
    task = clean["task"]
    raw = str(clean["answer"])
    answer = _number(raw) if task in NUMBER_TASKS else _yes_no(raw)
    assert answer is not None  # checked by _question_answer
    return Record(
        task, clean["graph_id"], file, clean.get("line") or row, clean["question"].strip(), answer
    )


def _pair(
    reading: Reading,
    base: Path,
    task: str,
    graph_id: int,
    questions_path: Path,
    answers_path: Path | None,
) -> None:
    """Line k of the questions with line k of the answers (None: every answer is yes), each
    pair checked by the task's schema; a problem is named in the file its field came from."""
    qfile = _rel(questions_path, base)
    questions = _lines(questions_path, base, reading)
    answers = None
    afile = qfile
    if answers_path is not None:
        afile = _rel(answers_path, base)
        answers = _lines(answers_path, base, reading)
    if questions is None or (answers_path is not None and answers is None):
        return
    if answers is not None and len(answers) != len(questions):
        shorter = min(len(answers), len(questions)) + 1
        reading.problems.append(
            Problem(
                afile,
                shorter,
                f"{len(answers)} answers for {len(questions)} questions in {qfile}"
                f" (the files part at line {shorter})",
            )
        )
        return
    schema = NUMBER_SCHEMA if task in NUMBER_TASKS else YES_NO_SCHEMA
    parse = _number if task in NUMBER_TASKS else _yes_no
    for index, question in enumerate(questions):
        line = index + 1
        raw = "yes" if answers is None else answers[index]
        clean, errors = schema.validate_row({"question": question, "answer": raw}, line)
        if clean is None:
            # The question first: an answer to no question is not worth a second message.
            first = min(errors, key=lambda error: error.field != "question")
            where = qfile if first.field == "question" else afile
            reading.problems.append(Problem(where, line, first.message))
            continue
        value = parse(clean["answer"])
        assert value is not None  # checked by the schema
        reading.records.append(Record(task, graph_id, qfile, line, question.strip(), value))


def _ids(folder: Path, pattern: str) -> list[tuple[int, Path]]:
    regex = re.compile(pattern)
    found = []
    for path in folder.glob("*.txt"):
        match = regex.fullmatch(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def read_carlgt(directory: str | Path) -> Reading:
    """Every question of CARL-GT under ``directory`` with its answer, or the problems."""
    base = data_directory(directory)
    reading = Reading()
    graph, table = base / "graph", base / "table"
    for folder, task in ((graph, "d_separation"), (table, "conditional_independence")):
        if not folder.is_dir():
            continue
        for graph_id, path in _ids(folder, r"(\d+)_questions\.txt"):
            answers = folder / f"{graph_id}_answers.txt"
            if not answers.exists():
                reading.problems.append(
                    Problem(_rel(path, base), None, f"no answers file {answers.name}")
                )
                continue
            _pair(reading, base, task, graph_id, path, answers)
    if table.is_dir():
        for graph_id, path in _ids(table, r"cdir_(\d+)_questions\.txt"):
            _pair(reading, base, "causal_direction", graph_id, path, None)
        shared = table / "intervention_questions.txt"
        for graph_id, path in _ids(table, r"intervention_(\d+)_gt\.txt"):
            own = table / f"intervention_{graph_id}_questions.txt"
            if own.exists():
                _pair(reading, base, "intervention", graph_id, own, path)
            elif graph_id < SMALL_GRAPH_MIN_ID and shared.exists():
                _pair(reading, base, "intervention", graph_id, shared, path)
            else:
                reading.skipped.append(f"{_rel(path, base)}: expected values without question text")
        for graph_id, path in _ids(table, r"counterfactual_questions_(\d+)\.txt"):
            answers = table / f"counterfactual_answers_{graph_id}.txt"
            if not answers.exists():
                reading.problems.append(
                    Problem(_rel(path, base), None, f"no answers file {answers.name}")
                )
                continue
            _pair(reading, base, "counterfactual", graph_id, path, answers)
        if (table / "counterfactual_questions.txt").exists():
            reading.skipped.append(
                "table/counterfactual_questions.txt: belongs to no graph (no answers file)"
            )
    if not reading.records and not reading.problems:
        reading.problems.append(Problem(str(directory), None, "no CARL-GT question files"))
    return reading


def variables(question: str) -> list[str]:
    """The variables a question names, in order (``V3``…), each once."""
    seen: list[str] = []
    for match in _VARIABLE.finditer(question):
        name = f"V{match.group(1)}"
        if name not in seen:
            seen.append(name)
    return seen

"""The Graphs tab's per-question view (graphs.views.questions, graphs.views.question): every
question of a CARL-GT project with how people answered it, hardest first, and one question with
its graph, its known answer and every answer given.

Answers are read through the engine's one visibility rule (``annotation.api.annotations_visible``,
with no viewer): only final answers — an answer still open to change is nobody's to count but
its author's — so the view shows what the scores will keep. The callers have checked that the
viewer may see known answers (``access_graphs_project`` with MONITOR: researchers and admins).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from annotation.api import annotations_visible
from annotation.errors import NotFound
from annotation.models import Annotation, Item, Project
from graphs.carlgt import NUMBER_TASKS, TASKS, YES_NO_TASKS

#: The filter values of the per-question list: every task, or one.
TASK_FILTERS = {"all": "every task", **TASKS}


@dataclass
class QuestionRow:
    """One question and its final answers: for yes / no tasks the counts and the share that
    matches the known answer; for numbers the mean answer and the mean absolute error."""

    item_id: int
    external_id: str
    task: str
    task_label: str
    graph_size: str
    question: str
    expected: Any
    answers: list[Any] = field(default_factory=list)

    @property
    def n_answers(self) -> int:
        return len(self.answers)

    @property
    def yes(self) -> int:
        return sum(1 for value in self.answers if value == "yes")

    @property
    def no(self) -> int:
        return sum(1 for value in self.answers if value == "no")

    @property
    def is_number(self) -> bool:
        return self.task in NUMBER_TASKS

    @property
    def share_correct(self) -> float | None:
        """Yes / no: the share of answers equal to the known one; None without answers or for
        a number task."""
        if self.is_number or not self.answers or self.expected is None:
            return None
        return sum(1 for value in self.answers if value == self.expected) / len(self.answers)

    @property
    def mean_answer(self) -> float | None:
        numbers = [float(v) for v in self.answers if isinstance(v, int | float)]
        return sum(numbers) / len(numbers) if self.is_number and numbers else None

    @property
    def mean_absolute_error(self) -> float | None:
        numbers = [float(v) for v in self.answers if isinstance(v, int | float)]
        if not self.is_number or not numbers or self.expected is None:
            return None
        return sum(abs(n - float(self.expected)) for n in numbers) / len(numbers)


def _final_answers(items) -> dict[int, list[Any]]:
    answers: dict[int, list[Any]] = defaultdict(list)
    final = annotations_visible(Annotation.objects.filter(item_stage__item__in=items), None)
    for item_id, payload in final.values_list("item_stage__item_id", "payload").order_by("pk"):
        value = (payload or {}).get("value")
        if value is not None:
            answers[item_id].append(value)
    return answers


def _row(item: Item, answers: list[Any]) -> QuestionRow:
    payload = item.payload or {}
    task = str(payload.get("task", "?"))
    return QuestionRow(
        item_id=item.pk,
        external_id=item.external_id,
        task=task,
        task_label=TASKS.get(task, task),
        graph_size=str(payload.get("graph_size", "?")),
        question=str(payload.get("question", "")),
        expected=payload.get("answer"),
        answers=answers,
    )


def question_rows(project: Project, *, task: str = "all") -> list[QuestionRow]:
    """Every question of ``project`` (of one task unless ``task`` is "all") with its final
    answers, the hardest first: yes / no questions by the share answered correctly (lowest
    first), then number questions by their mean absolute error (highest first), questions
    nobody has answered last. Reads the project's questions at once: CARL-GT projects hold
    thousands of questions, not millions."""
    found = Item.objects.filter(project=project).only("pk", "external_id", "payload")
    if task != "all":
        found = found.filter(payload__task=task)
    items = list(found.order_by("pk"))
    answers = _final_answers([item.pk for item in items])
    rows = [_row(item, answers.get(item.pk, [])) for item in items]

    def hardest_first(row: QuestionRow) -> tuple[int, float]:
        if row.share_correct is not None:
            return (0, row.share_correct)
        if row.mean_absolute_error is not None:
            return (1, -row.mean_absolute_error)
        return (2, 0.0)

    return sorted(rows, key=hardest_first)


def question_detail(project: Project, item_id: int) -> tuple[QuestionRow, str]:
    """One question of ``project`` with its final answers, and its graph drawn as SVG ("" when
    the question carries no edges); another project's id or an unknown one is a 404 alike."""
    from graphs.svg import dag_svg

    item = Item.objects.filter(project=project, pk=item_id).first()
    if item is None or (item.payload or {}).get("task") not in (*YES_NO_TASKS, *NUMBER_TASKS):
        raise NotFound("There is no such question in this project.")
    payload = item.payload
    svg = ""
    if payload.get("edges"):
        pair = tuple(node for node in (payload.get("x"), payload.get("y")) if node)
        svg = dag_svg(
            payload["edges"],
            payload.get("nodes"),
            pair=pair,
            given=tuple(payload.get("given") or ()),
        )
    return _row(item, _final_answers([item.pk]).get(item.pk, [])), svg

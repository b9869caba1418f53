"""What an export from another tool holds once read, whatever the tool: tasks (an item's data
and the answers given to it), and the problems found, each named by file, task and field.

Readers (``interop.labelstudio``, ``interop.potato``) turn a tool's files into a
:class:`SourceExport`; ``interop.services.interop_import`` writes one into a project. A reader
never stops at the first problem: it collects them all (:class:`Problems`), and the import
writes nothing while there is one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from annotation.errors import ApplicationError

#: Problems listed in an error's message; every one is in its ``extra``.
PROBLEMS_SHOWN = 20


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a source file: where (file, task id, field) and what."""

    file: str
    task: str
    field: str
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.task:
            where += f", task {self.task}"
        if self.field:
            where += f", {self.field}"
        return f"{where}: {self.message}"


class Problems:
    """The problems a reader found, raised together (:meth:`raise_any`)."""

    def __init__(self) -> None:
        self.found: list[Problem] = []

    def add(self, file: str, task: Any, field: str, message: str) -> None:
        self.found.append(Problem(file, "" if task is None else str(task), field, message))

    def __bool__(self) -> bool:
        return bool(self.found)

    def raise_any(self, what: str) -> None:
        """ApplicationError listing every problem (message: the first ones; ``extra``: all)."""
        if not self.found:
            return
        count = len(self.found)
        shown = "; ".join(str(problem) for problem in self.found[:PROBLEMS_SHOWN])
        more = f" (and {count - PROBLEMS_SHOWN} more)" if count > PROBLEMS_SHOWN else ""
        raise ApplicationError(
            f"{what}: {count} problem{'s' if count != 1 else ''}, nothing was imported. "
            f"{shown}{more}.",
            {"problems": [str(problem) for problem in self.found]},
        )


@dataclass(frozen=True)
class SourceAnswer:
    """One person's answer to one task, as the tool stored it.

    ``rater``: the tool's own id of the person (a number, a user name; never stored as it is:
    ``interop.pseudonyms``). ``field``: the control / scheme that was answered (Label Studio's
    ``from_name``, Potato's scheme name). ``kind``: the tool's type of that control (``choices``,
    ``rating``, ``number``, ``textarea``, ``labels``; Potato's ``radio``, ``likert``, …).
    ``value``: the answer, already taken out of the tool's wrapping (a list of choices, a
    number, a list of texts)."""

    rater: str
    field: str
    kind: str
    value: Any
    #: Where it was read, for problems found later (mapping): file, task id, field path.
    file: str = ""
    task: str = ""
    place: str = ""


@dataclass
class SourceTask:
    """One task / instance: its id in the tool, the item's data and its answers."""

    source_id: str
    external_id: str
    data: dict[str, Any]
    answers: list[SourceAnswer] = field(default_factory=list)


@dataclass
class SourceExport:
    """A whole export, read. ``tool``: ``label_studio`` or ``potato``. ``skipped``: what was
    read and deliberately left out, by reason (predictions, cancelled annotations, …)."""

    tool: str
    files: list[str]
    tasks: list[SourceTask]
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str, count: int = 1) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + count

    def fields(self) -> dict[str, set[str]]:
        """{field (control / scheme name): the tool's types seen for it}."""
        found: dict[str, set[str]] = {}
        for task in self.tasks:
            for answer in task.answers:
                found.setdefault(answer.field, set()).add(answer.kind)
        return found

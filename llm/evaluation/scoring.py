"""The contract of a workflow's release scorer, and the figures' intervals (Django-free).

A workflow registers one scorer for its project kind in its ``AppConfig.ready()``::

    register_plugin(Plugin(name=..., release_scorers={WORKFLOW: MyScorer()}))

and llm applies the field (``extension_point("release_scorers", ...)`` in llm/apps.py). A scorer
is an object with:

* ``questions(files: ReleaseFiles) -> Iterable[Question]`` — every question of a published
  release, read from the files the workflow's release layout wrote (llm.evaluation.files).
  ``Question.ask`` holds only what a test-taker sees; the answer, the people's answers and the
  scorer's bookkeeping are kept apart (``answer``, ``humans``, ``extra``).
* ``instructions: str`` — the system message; ``render(ask) -> str`` the user message, built
  from ``ask`` alone (:func:`messages` passes nothing else: no gold field can reach a prompt).
* ``answer_schema(ask) -> dict`` — the JSON schema of the answer object the model must return.
* ``parse(answer: dict, ask) -> value`` — the answer checked and reduced to the value the scorer
  compares (raise ``ValueError`` with a message when it is not a valid answer).
* ``score(answered: Sequence[tuple[Question, value]]) -> list[Metric]`` — the figures over a set
  of answers. The human baseline is the same call over the people's answers
  (``Question.humans``), so models and people are scored alike.

Figures come per group: ``"all"`` and one group per value of each key in ``Question.groups``
(``level=L1``); :func:`grouped` does the splitting, :func:`proportion` and :func:`mean` attach a
95 % interval (Wilson for a proportion, a seeded percentile bootstrap for a mean).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np

from agreement.plots import wilson_interval

#: Resamples of the bootstrap interval of a mean, and its seed (the figures are reproducible).
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20261126


@dataclass(frozen=True)
class Question:
    """One question of a release. ``id`` is unique within the release (a ledger call's
    ``subject``). ``ask``: what a test-taker sees — the only input of a prompt. ``answer``:
    the gold. ``groups``: the breakdowns this question counts in (``{"level": "L1"}``).
    ``humans``: the people's answers in the release, as values ``parse`` would return.
    ``extra``: the scorer's own bookkeeping (pairings), never in a prompt."""

    id: str
    ask: dict[str, Any]
    answer: Any
    groups: dict[str, str] = field(default_factory=dict)
    humans: tuple[Any, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Metric:
    """One figure: ``metric`` over the answers of ``group`` (``"all"`` or ``key=value``),
    ``n`` answers, ``value`` with its 95 % interval ``low``–``high`` (None when undefined)."""

    group: str
    metric: str
    n: int
    value: float | None
    low: float | None = None
    high: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ReleaseScorer(Protocol):
    """See the module docstring."""

    instructions: str

    def questions(self, files: Any) -> Iterable[Question]: ...

    def render(self, ask: dict[str, Any]) -> str: ...

    def answer_schema(self, ask: dict[str, Any]) -> dict[str, Any]: ...

    def parse(self, answer: Any, ask: dict[str, Any]) -> Any: ...

    def score(self, answered: Sequence[tuple[Question, Any]]) -> list[Metric]: ...


#: Registered scorers by workflow key (project kind); filled through ``extension_point``.
SCORERS: dict[str, ReleaseScorer] = {}


def register_scorer(workflow: str, scorer: ReleaseScorer) -> None:
    """Declare the release scorer of a project kind (replaces an earlier registration)."""
    SCORERS[workflow] = scorer


def scorer_for(workflow: str) -> ReleaseScorer | None:
    return SCORERS.get(workflow)


def messages(scorer: ReleaseScorer, question: Question) -> list[dict[str, str]]:
    """The chat messages asking ``question``: built from ``question.ask`` only."""
    ask = dict(question.ask)
    return [
        {"role": "system", "content": scorer.instructions},
        {"role": "user", "content": scorer.render(ask)},
    ]


def human_answers(questions: Iterable[Question]) -> list[tuple[Question, Any]]:
    """Every person's answer in the release, one pair each (the human baseline's input)."""
    return [(question, value) for question in questions for value in question.humans]


def group_names(question: Question) -> list[str]:
    return ["all", *(f"{key}={value}" for key, value in sorted(question.groups.items()))]


def grouped(
    answered: Sequence[tuple[Question, Any]],
) -> dict[str, list[tuple[Question, Any]]]:
    """The answers split by group (``"all"`` first, then the groups in sorted order)."""
    groups: dict[str, list[tuple[Question, Any]]] = defaultdict(list)
    for question, value in answered:
        for name in group_names(question):
            groups[name].append((question, value))
    return {name: groups[name] for name in sorted(groups, key=lambda g: (g != "all", g))}


def proportion(group: str, metric: str, hits: int, n: int) -> Metric:
    """A share with its Wilson interval (agreement.plots.wilson_interval)."""
    if n == 0:
        return Metric(group, metric, 0, None)
    low, high = wilson_interval(hits, n)
    return Metric(group, metric, n, hits / n, low, high)


def mean(group: str, metric: str, values: Sequence[float | None]) -> Metric:
    """The mean of the defined values with a seeded percentile bootstrap interval."""
    present = np.array([float(v) for v in values if v is not None], dtype=float)
    if present.size == 0:
        return Metric(group, metric, 0, None)
    value = float(present.mean())
    if present.size == 1:
        return Metric(group, metric, 1, value)
    return Metric(group, metric, int(present.size), value, *bootstrap(present, np.mean))


def bootstrap(
    values: np.ndarray, statistic: Callable[[np.ndarray], float]
) -> tuple[float | None, float | None]:
    """The 95 % percentile interval of ``statistic`` over resamples of ``values`` (rows)."""
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    index = rng.integers(0, len(values), size=(BOOTSTRAP_RESAMPLES, len(values)))
    replicates = np.array([statistic(values[row]) for row in index], dtype=float)
    replicates = replicates[np.isfinite(replicates)]
    if replicates.size == 0:
        return None, None
    low, high = np.percentile(replicates, [2.5, 97.5])
    return float(low), float(high)


def accuracy_by_group(
    answered: Sequence[tuple[Question, Any]],
    correct: Callable[[Question, Any], bool],
    metric: str = "accuracy",
) -> list[Metric]:
    """Accuracy per group: the share of answers ``correct`` calls right."""
    return [
        proportion(group, metric, sum(1 for q, v in rows if correct(q, v)), len(rows))
        for group, rows in grouped(answered).items()
    ]

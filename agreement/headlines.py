"""Stage headlines a workflow computes itself, for the Agreement page's table of stages.

Most stages' headline is the latest agreement snapshot (agreement.selectors
.latest_snapshots_by_stage). A workflow that computes its own reliability figure from the same
annotations (ratings projects: Krippendorff's α with bootstrap intervals on their own page)
registers a provider here in its AppConfig.ready(), so that both pages show one figure from one
source instead of two computations that disagree. This app never names the workflows.

A provider is ``provider(project, stages) -> {stage id: Headline}``; it answers only for the
stages it owns and returns {} for any other project. Later registrations win for a stage.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from annotation.slots import EVERYONE

#: Slots given to stages every annotator should see (practice items, attention checks): any
#: overlap at least this large reads "every annotator", not a number (the engine's EVERYONE).
EVERYONE_AT_LEAST = EVERYONE


@dataclass(frozen=True)
class Headline:
    """The fields the table reads from an AgreementSnapshot, plus where the figure comes from."""

    metric: str
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    computed_at: datetime | None = None
    url: str = ""
    note: str = ""
    #: The items the figure rests on, when the provider knows (the small-sample warning,
    #: ``agreement.small_sample``); None claims nothing.
    n_items: int | None = None


Provider = Callable[[Any, Iterable[Any]], dict[int, Headline]]
_providers: list[Provider] = []


def register_headline_provider(provider: Provider) -> Provider:
    """Let ``provider`` give the headline of the stages it owns (registering twice keeps one)."""
    if provider not in _providers:
        _providers.append(provider)
    return provider


def provided_headlines(project: Any, stages: Iterable[Any]) -> dict[int, Headline]:
    """{stage id: Headline} from every registered provider (stages nobody owns are absent)."""
    stages = list(stages)
    headlines: dict[int, Headline] = {}
    for provider in _providers:
        headlines.update(provider(project, stages) or {})
    return headlines

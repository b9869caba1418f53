"""Advisory raters: annotators whose answers a stage collects and measures but does not count.

A plug-in that adds raters of its own beside the people — a model rater that does not fill a
human slot (llm/) — registers a provider: ``provider(stage) -> ids`` of the annotators whose
answers in ``stage`` are advice. Resolution (annotation/services/outcomes.py) leaves their
ballots out of the policy's decision and asks for as many fewer votes (``required``) as it left
out; everything else about their work is an annotation like any other (leases, overlap,
idempotent submits, counters, exports). Registered through the plug-in interface
(``Plugin.advisory_raters``, annotation/plugins.py).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from annotation.models import Stage

AdvisoryProvider = Callable[[Stage], Collection[int]]

PROVIDERS: list[AdvisoryProvider] = []


def register_advisory_provider(provider: AdvisoryProvider) -> AdvisoryProvider:
    PROVIDERS.append(provider)
    return provider


def advisory_annotators(stage: Stage) -> frozenset[int]:
    """The annotators whose answers in ``stage`` do not count in its decisions."""
    ids: set[int] = set()
    for provider in PROVIDERS:
        ids.update(provider(stage))
    return frozenset(ids)

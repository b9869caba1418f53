"""Advisory raters: annotators whose answers a stage collects and measures but does not count.

A plug-in that adds raters of its own beside the people — a model rater that does not fill a
human slot (llm/) — registers a provider: ``provider() -> expression``, a boolean query
expression over an ``Annotation`` row (``OuterRef("annotator_id")``,
``OuterRef("item_stage__stage_id")``), true when that answer is advice. Resolution
(annotation/services/outcomes.py) reads it in the same statement as the ballots (no query of
its own on the resolution path), leaves those ballots out of the policy's decision and asks for
as many fewer votes (``required``) as it left out; everything else about their work is an
annotation like any other (leases, overlap, idempotent submits, counters, exports). Registered
through the plug-in interface (``Plugin.advisory_raters``, annotation/plugins.py).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce
from operator import or_
from typing import Any

from django.db.models import Q, Value

from annotation.models import Annotation, Stage

AdvisoryProvider = Callable[[], Any]

PROVIDERS: list[AdvisoryProvider] = []


def register_advisory_provider(provider: AdvisoryProvider) -> AdvisoryProvider:
    PROVIDERS.append(provider)
    return provider


def advisory_expression() -> Any:
    """One boolean expression over an Annotation row: is this answer advice?"""
    if not PROVIDERS:
        return Value(False)
    return reduce(or_, (Q(provider()) for provider in PROVIDERS))


def advisory_annotators(stage: Stage) -> frozenset[int]:
    """The annotators whose answers in ``stage`` do not count in its decisions."""
    if not PROVIDERS:
        return frozenset()
    return frozenset(
        Annotation.objects.filter(item_stage__stage=stage, annotator__isnull=False)
        .filter(advisory_expression())
        .values_list("annotator_id", flat=True)
        .distinct()
    )

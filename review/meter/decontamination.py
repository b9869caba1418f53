"""METER's de-contamination: model judges decide, without the passage, whether a verified pair
is causal; only pairs every model calls non-causal are kept (a pair a model can call causal
from the cause and effect alone would test what it knows, not what it reads).

* Kind ``meter_decontaminate``: ``{"value": "causal" | "non_causal", "comment"}``; annotators
  (model raters, and any person the stage admits) see the pair's ``cause`` and ``effect`` only —
  never its ``context`` (the stage's ``visible_fields`` may narrow this further, not widen it:
  :meth:`MeterDecontaminateKind.validate_config` refuses ``context``).
* :func:`decontamination_stage_create`: the stage, decided by ``model_unanimity`` (llm/judges.py)
  with ``value`` ``non_causal`` — accept keeps the pair verified, reject discards it naming the
  model that called it causal.
* :func:`decontamination_open`: the verified pairs with no generated entry yet enter it.

The judges themselves are model raters (``llm.services.rater_add`` with ``fills_human_slot``:
they fill the stage's slots, three by default) run like any other (llm/runs.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from annotation import api as engine
from annotation.errors import ApplicationError
from annotation.kinds import KindContext, TaskKind
from annotation.kinds.simple import _comment
from annotation.models import Item, Project, Stage
from review.meter.services import ENTRY_SUFFIX, _pairs_with_entries

KIND = "meter_decontaminate"
STAGE_SLUG = "decontaminate"
VALUES = ("causal", "non_causal")
#: What a judge of this stage may see: never the passage.
JUDGE_FIELDS = ("cause", "effect")


class MeterDecontaminateKind(TaskKind):
    """Is the pair causal, judged from the cause and the effect alone?"""

    key = KIND
    label = "METER: causal without the passage? (de-contamination)"
    template = "annotation/kinds/label.html#form"
    policies = ("model_unanimity", "majority")
    default_policy = "model_unanimity"
    reject_values = ("causal",)
    default_visible_fields = JUDGE_FIELDS

    def categories(self, config: Mapping[str, Any]) -> list[Any]:
        return list(VALUES)

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        from llm.judges import model_mark

        value = payload.get("value")
        if value not in VALUES:
            raise ApplicationError(
                f"Answer causal or non_causal (got {value!r}).", {"value": " or ".join(VALUES)}
            )
        return model_mark({"value": value, "comment": _comment(payload)}, context.annotator_id)

    def validate_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        clean = super().validate_config(config)
        if "context" in (clean.get("visible_fields") or ()):
            raise ApplicationError(
                "The de-contamination stage judges a pair without its passage: leave context "
                "out of visible_fields.",
                {"visible_fields": "without context"},
            )
        return clean

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [("1", "causal"), ("2", "non_causal")]


def decontamination_stage_create(*, project: Project, judges: int = 3) -> Stage:
    """The de-contamination stage at the end of the project's pipeline (module docstring);
    ``judges``: its slots, each filled by a model rater added with ``fills_human_slot``."""
    return engine.stage_create(
        project=project,
        slug=STAGE_SLUG,
        name="De-contamination (model judges)",
        kind=KIND,
        overlap=judges,
        config={"choices": list(VALUES)},  # the label form's buttons (people, when admitted)
        resolution_policy="model_unanimity",
        policy_options={"value": "non_causal", "min_models": judges},
        routes={
            "accept": {"action": "finish"},
            "reject": {
                "action": "discard",
                "reason": "a model judge called the pair causal without its passage",
            },
        },
        instructions="From the cause and the effect alone: is the first a cause of the second?",
    )


def decontamination_open(*, project: Project) -> int:
    """Open the verified pairs that have no entry yet in the de-contamination stage."""
    stage = Stage.objects.get(project=project, slug=STAGE_SLUG)
    done = _pairs_with_entries(project)
    pairs = (
        Item.objects.filter(project=project, status=Item.Status.ACCEPTED)
        .exclude(external_id__endswith=ENTRY_SUFFIX)
        .exclude(external_id__in=done)
    )
    return engine.item_stages_open(items=pairs, stage=stage)

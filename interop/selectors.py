"""Reads of the interop app: a project as Label Studio tasks (the "JSON" export format, so that
Label Studio imports it with its answers as annotations), and what the upload page offers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from annotation.kinds import get_kind
from annotation.models import Item, Project, Resolution, Stage
from interop.labelstudio import META_EXTERNAL_ID

#: Items read per query while streaming an export.
CHUNK = 2000


def _result(stage: Stage, value: Any, to_name: str) -> dict[str, Any]:
    """A stage's decided value as a Label Studio result: categories → ``choices``, whole
    numbers on an interval scale → ``rating``, other numbers → ``number``, anything else →
    ``textarea`` holding the value as JSON text."""
    kind = get_kind(stage.kind)
    wrapped: dict[str, Any]
    if kind.agreement.categorical and not isinstance(value, dict | list):
        shape, wrapped = "choices", {"choices": [str(value)]}
    elif isinstance(value, int) and not isinstance(value, bool):
        shape, wrapped = "rating", {"rating": value}
    elif isinstance(value, float):
        shape, wrapped = "number", {"number": value}
    elif isinstance(value, str):
        shape, wrapped = "textarea", {"text": [value]}
    else:
        shape, wrapped = "textarea", {"text": [json.dumps(value, ensure_ascii=False)]}
    return {
        "id": f"{stage.slug}",
        "from_name": stage.slug,
        "to_name": to_name,
        "type": shape,
        "value": wrapped,
        "origin": "manual",
    }


def label_studio_tasks(project: Project) -> Iterator[dict[str, Any]]:
    """Every item of ``project`` as a Label Studio task, in item order: ``data`` its payload,
    ``meta`` its external id, and — when any stage decided it — one annotation marked
    ``ground_truth`` whose results are the stages' decisions (``from_name``: the stage's slug;
    pending decisions are left out). Label Studio needs no user for an imported annotation,
    so none is named (``interop.labelstudio`` reads such an annotation as a rater-less
    decision)."""
    stages = {stage.pk: stage for stage in project.stages.all()}
    last = 0
    while True:
        items = list(
            Item.objects.filter(project=project, pk__gt=last)
            .order_by("pk")
            .values("pk", "external_id", "payload", "created_at")[:CHUNK]
        )
        if not items:
            return
        last = items[-1]["pk"]
        decided: dict[int, list[tuple[int, Any]]] = {}
        for item_id, stage_id, value in (
            Resolution.objects.filter(
                item_stage__item_id__in=[item["pk"] for item in items], value__isnull=False
            )
            .exclude(outcome="pending")
            .order_by("item_stage__item_id", "item_stage__stage__position")
            .values_list("item_stage__item_id", "item_stage__stage_id", "value")
        ):
            decided.setdefault(item_id, []).append((stage_id, value))
        for item in items:
            payload = item["payload"] or {}
            to_name = next(iter(payload), "text")
            task: dict[str, Any] = {
                "id": item["pk"],
                "data": payload,
                "meta": {META_EXTERNAL_ID: item["external_id"]},
                "created_at": item["created_at"].isoformat(),
                "annotations": [],
                "predictions": [],
            }
            results = [
                _result(stages[stage_id], value, to_name)
                for stage_id, value in decided.get(item["pk"], [])
            ]
            if results:
                task["annotations"].append(
                    {"result": results, "ground_truth": True, "was_cancelled": False}
                )
            yield task


def label_studio_json(project: Project) -> Iterator[str]:
    """:func:`label_studio_tasks` as the text of one JSON array, in pieces (for streaming)."""
    yield "["
    for number, task in enumerate(label_studio_tasks(project)):
        yield ("," if number else "") + "\n" + json.dumps(task, ensure_ascii=False)
    yield "\n]\n"


def import_stages(project: Project) -> list[Stage]:
    """The stages answers from another tool may go into: inactive, voting with ``value``."""
    return [
        stage
        for stage in project.stages.filter(is_active=False).order_by("position")
        if get_kind(stage.kind).vote_field == "value"
    ]

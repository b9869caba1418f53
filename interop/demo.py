"""The interop demo (its plug-in's ``demo``): *From Label Studio (demo)*, whose earlier labels
come from a small Label Studio export generated here at seed time (in Label Studio's JSON export
shape: three people, one cancelled annotation, two predictions) and imported through the
interop service, so its *Agreement* tab counts them. The file stays in
``MEDIA_ROOT/interop-demo/`` for a newcomer to upload again into the empty inactive stage
*Your upload* (``admin``: Imports → *From Label Studio or Potato*), or to compare with the
project's own *Download as Label Studio tasks*."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings

from annotation import api as engine
from annotation.fixtures.demo_pairs import DEMO_PAIRS
from annotation.fixtures.demo_users import demo_members_add
from annotation.models import Annotation, Project, Stage
from interop import services
from interop.labelstudio import label_studio_read
from interop.uploads import checksum

DEMO_SLUG = "interop-demo"
CHOICES = ["causal", "temporal", "unrelated"]
#: Who disagrees with the pair's expected label where (task number → (person, label)).
DISSENT = {2: (12, "temporal"), 5: (13, "causal"), 7: (11, "unrelated")}


def demo_export_path() -> Path:
    return Path(settings.MEDIA_ROOT) / "interop-demo" / "label-studio-export.json"


def demo_export() -> list[dict[str, Any]]:
    """Eight tasks as Label Studio exports them: the demo pairs, each labelled by people 11,
    12 and 13 (13 written in the older ``completed_by`` shape, with an e-mail that is never
    kept), one cancelled annotation and two model predictions (counted, not imported)."""
    tasks = []
    for number, (a, b, expected) in enumerate(DEMO_PAIRS[:8], start=1):
        annotations = []
        for person in (11, 12, 13):
            who, label = DISSENT.get(number, (None, None))
            choice = label if who == person else expected
            cancelled = number == 8 and person == 13
            annotations.append(
                {
                    "id": number * 10 + person,
                    "completed_by": (
                        {"id": person, "email": f"rater{person}@example.org"}
                        if person == 13
                        else person
                    ),
                    "result": []
                    if cancelled
                    else [
                        {
                            "id": f"r{number}-{person}",
                            "from_name": "relation",
                            "to_name": "sentence_a",
                            "type": "choices",
                            "value": {"choices": [choice]},
                            "origin": "manual",
                        }
                    ],
                    "was_cancelled": cancelled,
                    "ground_truth": False,
                    "created_at": "2026-11-20T10:00:00.000000Z",
                    "updated_at": "2026-11-20T10:00:00.000000Z",
                    "lead_time": 4.2,
                    "task": number,
                    "project": 1,
                }
            )
        predictions = (
            [
                {
                    "id": number,
                    "model_version": "demo-model",
                    "score": 0.5,
                    "result": [
                        {
                            "from_name": "relation",
                            "to_name": "sentence_a",
                            "type": "choices",
                            "value": {"choices": [expected]},
                        }
                    ],
                }
            ]
            if number <= 2
            else []
        )
        tasks.append(
            {
                "id": number,
                "data": {"sentence_a": a, "sentence_b": b},
                "annotations": annotations,
                "predictions": predictions,
                "meta": {},
                "created_at": "2026-11-20T09:00:00.000000Z",
                "updated_at": "2026-11-20T10:00:00.000000Z",
                "inner_id": number,
                "total_annotations": 3,
                "cancelled_annotations": 0,
                "total_predictions": len(predictions),
                "project": 1,
            }
        )
    return tasks


def seed(*, users: Mapping[str, Any]) -> Project:
    """The demo project, its stages and the imported export. Safe to run again."""
    project = Project.objects.filter(slug=DEMO_SLUG).first()
    if project is None:
        project = engine.project_create(
            slug=DEMO_SLUG,
            name="From Label Studio (demo)",
            description="Labels given in Label Studio, imported as the work of pseudonymous "
            "raters; new pairs are labelled here.",
        )
        engine.stage_create(
            project=project,
            slug="label",
            name="Label the relation",
            kind="label",
            overlap=3,
            config={"choices": CHOICES},
            instructions="Does A cause B, merely precede it, or neither?",
        )
        for slug, name in (("earlier", "Earlier labels (Label Studio)"), ("upload", "Your upload")):
            engine.stage_create(
                project=project,
                slug=slug,
                name=name,
                kind="label",
                overlap=3,
                config={"choices": CHOICES},
                is_active=False,
                instructions="Labels given in Label Studio, imported (not labelled here).",
            )
    demo_members_add(project, users)
    path = demo_export_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    content = json.dumps(demo_export(), indent=1).encode()
    path.write_bytes(content)
    earlier = Stage.objects.get(project=project, slug="earlier")
    if not Annotation.objects.filter(item_stage__stage=earlier).exists():
        services.interop_import(
            project=project,
            stage=earlier,
            export=label_studio_read(content, filename=path.name),
            field=None,
            key=f"label_studio:{checksum({path.name: content})}",
        )
    return project

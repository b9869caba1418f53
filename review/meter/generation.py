"""METER's questions and distractors written by a model: the generator ``meter_entries``
(llm/generation.py) — what ``meter_export_for_generation`` / ``meter_import_entries`` do by
hand, inside a generation run.

* **Seeds**: the verified pairs without an entry (``services.generation_rows``, the export's
  own list). The prompt may use what the *Verify pairs* stage shows its annotators (the pair's
  id, source, context, cause, effect and triggers: ``llm.prompts.item_fields``) — the fields the
  export file carries.
* **Answer**: ``{"questions": [three questions]}``, each ``{"level", "question", "correct",
  "distractors": [{"text", "category"} × 4]}`` (a JSON schema the endpoint is asked to follow),
  checked by ``entries.clean_questions`` — the import's own check — before anything is written.
* **Write**: one entries import of that one entry (``services.entries_import``: the same
  checks, the entry created with the pair id as its lineage and opened in the check → edit →
  vote stage, like a hand import), with ``generated_by`` (endpoint, model, prompt version,
  parameters, the call's ledger key) on the entry's payload.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from annotation.errors import ApplicationError
from annotation.models import Item, Project, Stage
from llm import prompts
from llm.generation import ModelGenerator, Seed, Written, check_failed
from review.meter.entries import CATEGORIES, LEVELS, N_DISTRACTORS, EntryInvalid, clean_questions
from review.meter.services import WORKFLOW, entries_import_text, generation_rows


class MeterEntriesGenerator(ModelGenerator):
    key = "meter_entries"
    label = "METER: questions and distractors from a verified pair"
    workflow = WORKFLOW
    kind = "meter_edit"

    def seeds(self, project: Project, options: Mapping[str, Any]) -> Iterable[Seed]:
        verify = Stage.objects.filter(project=project, kind="meter_verify").order_by("position")
        stage = verify.first()
        if stage is None:
            raise ApplicationError("This project has no verification stage.", {"stage": ""})
        ids = [row["pair_id"] for row in generation_rows(project)]
        items = {
            item.external_id: item
            for item in Item.objects.filter(project=project, external_id__in=ids)
        }
        for pair_id in ids:
            item = items[pair_id]
            yield Seed(item=item, fields=prompts.item_fields(item, stage), subject=pair_id)

    def answer_schema(self, project: Project, options: Mapping[str, Any]) -> dict[str, Any]:
        distractor = {
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "category": {"enum": list(CATEGORIES)},
            },
            "required": ["text", "category"],
        }
        question = {
            "type": "object",
            "properties": {
                "level": {"enum": list(LEVELS)},
                "question": {"type": "string"},
                "correct": {"type": "string"},
                "distractors": {
                    "type": "array",
                    "items": distractor,
                    "minItems": N_DISTRACTORS,
                    "maxItems": N_DISTRACTORS,
                },
            },
            "required": ["level", "question", "correct", "distractors"],
        }
        return {
            "type": "object",
            "properties": {
                "questions": {"type": "array", "items": question, "minItems": 3, "maxItems": 3}
            },
            "required": ["questions"],
        }

    def check(self, answer: dict[str, Any], seed: Seed) -> dict[str, Any]:
        try:
            clean_questions(answer.get("questions"))
        except EntryInvalid as error:
            raise check_failed(
                "; ".join(f"{p.field}: {p.message}" for p in error.problems[:5])
            ) from None
        return {"questions": answer["questions"]}

    def write(
        self, *, project: Project, seed: Seed, answer: dict[str, Any], provenance: dict[str, Any]
    ) -> Written:
        line = {
            "pair_id": seed.item.external_id,
            "questions": answer["questions"],
            "generated_by": provenance,
        }
        report = entries_import_text(
            project=project, text=json.dumps(line, ensure_ascii=False), filename="model.jsonl"
        )
        if not report.ok:
            raise ApplicationError(
                "; ".join(error.message for error in report.errors[:3]), {"entry": seed.subject}
            )
        return Written(created=report.created)

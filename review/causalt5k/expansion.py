"""CausalT5k's expansion of gold seeds into candidates by a model: the generator
``ct5k_expansion`` (llm/generation.py), with the human floor respected.

* **Seeds** (``options``: ``seeds`` — case ids, default every case the quality gate kept that
  was not itself generated; ``domains`` — D-codes of the cells to write into, default the
  seed's own; ``per_cell`` — candidates asked per seed and cell, default 3): one unit per seed
  and target domain, so a seed of trap W7 expands into the cells (W7, D1), (W7, D4), …. The
  prompt may use what the *Quality score* stage shows its reviewers (the case with its gold
  answer: a model expanding a seed writes cases of the same trap and label logic), plus
  ``target_domain``, ``target_domain_name`` and ``count``.
* **Answer**: ``{"candidates": [{"scenario", "claim", "label", "rationale"}]}``; each needs a
  scenario, a claim and a label of the seed's tier.
* **The human floor** (review/causalt5k/floor.py): a candidate is written only while its cell's
  human-written share stays at or above the project's floor (``floor_settings``: 20 % of all
  cases by default) — at most ``human / floor − cases`` more model-written cases in a cell
  (basis ``known``: ``human / floor − human − llm``). Candidates beyond it are held back and
  counted on the run ("held back by the human floor"); a cell with no human case takes none.
* **Write**: new case items — the seed's tier, level, trap and the target domain, a case id of
  the release's form (``T{tier}-{trap}-{DOM}-{seq}``, the next free sequence),
  ``seed_case_id`` (the lineage), ``generator: "llm_generated"`` and ``provenance: "llm"`` (so
  the floor counts them as model-written) and ``generated_by`` — then validation is started on
  them as on imported cases (``pipeline.causalt5k_review_open``: near-duplicate clusters to the
  queue, the rest to adversarial review).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from django.db import transaction

from annotation import api as engine
from annotation.errors import ApplicationError
from annotation.models import Item, Project, Stage
from llm import prompts
from llm.generation import ModelGenerator, Seed, Written, check_failed
from review.causalt5k.floor import floor_settings, provenance_of
from review.causalt5k.pipeline import case_items, causalt5k_review_open
from review.causalt5k.review_vocab import labels_for
from review.causalt5k.vocab import DOMAINS, HUMAN, LLM, TRAPS

WORKFLOW = "causalt5k"
DEFAULT_PER_CELL = 3
MAX_PER_CELL = 20
_SEQ = re.compile(r"-(\d+)$")


def _cell_counts(project: Project, trap: str, domain: str) -> dict[str, int]:
    counts = {"cases": 0, HUMAN: 0, LLM: 0, "unknown": 0}
    rows = (
        case_items(project)
        .exclude(status=Item.Status.DISCARDED)
        .filter(payload__trap=trap, payload__domain=domain)
        .values_list("payload", "author_id")
    )
    for payload, author_id in rows:
        counts["cases"] += 1
        counts[provenance_of(payload, author_id)] += 1
    return counts


def floor_quota(project: Project, trap: str, domain: str) -> int:
    """How many more model-written cases the cell (trap, domain) takes (module docstring)."""
    settings = floor_settings(project)
    threshold, counts = settings["threshold"], _cell_counts(project, trap, domain)
    if threshold <= 0:
        return MAX_PER_CELL
    base = counts["cases"] if settings["basis"] == "all" else counts[HUMAN] + counts[LLM]
    return max(0, math.floor(counts[HUMAN] / threshold + 1e-9) - base)


def _next_ids(project: Project, prefix: str, count: int) -> list[str]:
    taken = Item.objects.filter(project=project, external_id__startswith=prefix).values_list(
        "external_id", flat=True
    )
    last = max((int(m.group(1)) for e in taken if (m := _SEQ.search(e))), default=0)
    return [f"{prefix}{last + n:03d}" for n in range(1, count + 1)]


class CausalT5kExpansionGenerator(ModelGenerator):
    key = "ct5k_expansion"
    label = "CausalT5k: gold seeds expanded into candidates per trap × domain cell"
    workflow = WORKFLOW
    kind = "ct5k_review"
    option_names = ("seeds", "domains", "per_cell")

    def clean_options(self, project: Project, options: Mapping[str, Any]) -> dict[str, Any]:
        clean = super().clean_options(project, options)
        domains = clean.get("domains")
        if domains is not None and (
            not isinstance(domains, list) or not all(d in DOMAINS for d in domains)
        ):
            raise ApplicationError(
                "domains: a list of D-codes (D1–D10).", {"domains": str(domains)[:80]}
            )
        per_cell = clean.get("per_cell", DEFAULT_PER_CELL)
        if isinstance(per_cell, bool) or not isinstance(per_cell, int):
            raise ApplicationError("per_cell: a whole number.", {"per_cell": per_cell})
        if not 1 <= per_cell <= MAX_PER_CELL:
            raise ApplicationError(f"per_cell: from 1 to {MAX_PER_CELL}.", {"per_cell": per_cell})
        seeds = clean.get("seeds")
        if seeds is not None and not (
            isinstance(seeds, list) and all(isinstance(s, str) for s in seeds)
        ):
            raise ApplicationError("seeds: a list of case ids.", {"seeds": str(seeds)[:80]})
        return clean

    def form_options(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """``per_cell`` (a number) and ``domains`` (D-codes separated by commas or spaces)."""
        options: dict[str, Any] = {}
        per_cell = str(data.get("per_cell") or "").strip()
        if per_cell:
            if not per_cell.isdigit():
                raise ApplicationError("per_cell: a whole number.", {"per_cell": per_cell[:20]})
            options["per_cell"] = int(per_cell)
        domains = str(data.get("domains") or "").replace(",", " ").split()
        if domains:
            options["domains"] = [d.upper() for d in domains]
        return options

    def seeds(self, project: Project, options: Mapping[str, Any]) -> Iterable[Seed]:
        stage = Stage.objects.filter(project=project, kind="ct5k_score").order_by("position")
        score = stage.first()
        if score is None:
            raise ApplicationError("This project has no quality-score stage.", {"stage": ""})
        cases = case_items(project).order_by("pk")
        if options.get("seeds") is not None:
            cases = cases.filter(external_id__in=options["seeds"])
        else:
            cases = cases.filter(status=Item.Status.ACCEPTED)
        per_cell = options.get("per_cell", DEFAULT_PER_CELL)
        for item in cases:
            if item.payload.get("seed_case_id") or item.payload.get("trap") not in TRAPS:
                continue  # generated cases are not seeds; a seed needs a W/S trap
            fields = prompts.item_fields(item, score)
            for domain in options.get("domains") or [item.payload.get("domain")]:
                if domain not in DOMAINS:
                    continue
                yield Seed(
                    item=item,
                    fields={
                        **fields,
                        "target_domain": domain,
                        "target_domain_name": DOMAINS[domain][0],
                        "count": per_cell,
                    },
                    subject=f"{item.external_id}:{domain}",
                    extra={"domain": domain},
                )

    def answer_schema(self, project: Project, options: Mapping[str, Any]) -> dict[str, Any]:
        candidate = {
            "type": "object",
            "properties": {
                "scenario": {"type": "string"},
                "claim": {"type": "string"},
                "label": {"type": "string"},
                "rationale": {"type": "string"},
            },
            "required": ["scenario", "claim", "label"],
        }
        return {
            "type": "object",
            "properties": {"candidates": {"type": "array", "items": candidate, "minItems": 1}},
            "required": ["candidates"],
        }

    def check(self, answer: dict[str, Any], seed: Seed) -> dict[str, Any]:
        raw = answer.get("candidates")
        if not isinstance(raw, list) or not raw:
            raise check_failed("candidates: expected a non-empty list")
        labels = labels_for(seed.item.payload.get("tier"))
        clean = []
        for n, candidate in enumerate(raw[:MAX_PER_CELL]):
            if not isinstance(candidate, dict):
                raise check_failed(f"candidates[{n}]: expected an object")
            texts = {k: str(candidate.get(k) or "").strip() for k in ("scenario", "claim")}
            for name, text in texts.items():
                if not text:
                    raise check_failed(f"candidates[{n}].{name}: empty")
            label = str(candidate.get("label") or "").strip().upper()
            if label not in labels:
                raise check_failed(
                    f"candidates[{n}].label: {label!r} is not one of {', '.join(labels)}"
                )
            rationale = str(candidate.get("rationale") or "").strip()
            clean.append(
                {**texts, "label": label, **({"rationale": rationale} if rationale else {})}
            )
        return {"candidates": clean}

    def write(
        self, *, project: Project, seed: Seed, answer: dict[str, Any], provenance: dict[str, Any]
    ) -> Written:
        case = seed.item.payload
        domain, trap = seed.extra["domain"], case["trap"]
        candidates = answer["candidates"]
        room = min(len(candidates), floor_quota(project, trap, domain))
        held = len(candidates) - room
        if room:
            prefix = f"T{case.get('tier')}-{trap}-{DOMAINS[domain][1]}-"
            inherited = ("tier", "pearl_level", "trap", "trap_name", "trap_family", "difficulty")
            rows = [
                {
                    "external_id": case_id,
                    "payload": {
                        **{k: case[k] for k in inherited if case.get(k) not in (None, "")},
                        **candidate,
                        "case_id": case_id,
                        "domain": domain,
                        "domain_name": DOMAINS[domain][0],
                        "seed_case_id": seed.item.external_id,
                        "generator": "llm_generated",
                        "provenance": LLM,
                        "generated_by": provenance,
                    },
                }
                for case_id, candidate in zip(
                    _next_ids(project, prefix, room), candidates[:room], strict=True
                )
            ]
            with transaction.atomic():
                engine.items_create(project=project, rows=rows, open_first_stage=False)
                causalt5k_review_open(project=project)
        return Written(created=room, held=held, note="held back by the human floor" if held else "")

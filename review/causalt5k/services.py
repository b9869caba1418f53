"""CausalT5k projects: the release imported as canonical cases, the normalisation report,
near-duplicate clusters (review/README.md, "CausalT5k").

``causalt5k_import`` reads a release folder, normalises it (``review.causalt5k.normalise``,
Django-free) and writes one item per canonical case and the report, in one transaction: a
failure leaves the project as it was.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.db import transaction

from annotation import api as engine
from annotation.errors import ApplicationError
from annotation.models import Project
from imports.core.schema import RowSchema
from imports.services import ItemFields, default_item_mapper
from review.causalt5k import neardup, vocab
from review.causalt5k.models import CausalT5kImport
from review.causalt5k.normalise import normalise_record, normalise_release
from review.causalt5k.release_files import read_release
from review.causalt5k.vocab import TRAPS

WORKFLOW = "causalt5k"

GUIDELINES = """CausalT5k cases: a self-contained scenario and a causal claim at one Pearl rung,
with the gold answer, the trap (Wolf, W1–W10) or design (Sheep, S1–S8) and a wise refusal."""


def case_item_mapper(
    clean: dict[str, Any], schema: RowSchema, options: Mapping[str, Any]
) -> ItemFields:
    """How a row of the Imports page becomes a case item in a CausalT5k project: as the
    default mapper does (``imports.services.default_item_mapper``), once its vocabulary is
    checked. A ``trap`` written as a value must be one of the paper's codes (W1–W10, S1–S8,
    ``review/causalt5k/vocab.py``) or empty, since the review editors offer those alone; an
    object (the release's ``{type, type_name, …}``) is kept as submitted, its ``type`` read into
    ``trap_type``. Raises ``ValueError``, which the import reports with the row's line, naming
    the field and the value. The payload also names the case (``case_id``, the row's id) and
    its ``tier`` (from ``pearl_level``), as a release's canonical cases do: the review screens
    and the blind answer stage read them; a ``domain`` a rule knows ("Medicine", "D4 (Medicine
    & Health)") becomes its D-code with ``domain_name``, which the release layout files by."""
    trap = clean.get("trap")
    if trap is not None and not isinstance(trap, dict | list):
        text = str(trap).strip()
        if text and text not in TRAPS:
            code, family = vocab.trap_code(text)
            hint = (
                f"; {text!r} reads as {code}, write that"
                if code
                else f"; {family} has no W/S equivalent: give it as trap_family"
                if family
                else ""
            )
            raise ValueError(
                f'Field "trap": {text!r} is not a trap (W1–W10) or design (S1–S8) code{hint}.'
            )
    fields = default_item_mapper(clean, schema, options)
    payload = {"case_id": clean[schema.external_id_field or "id"], **fields.payload}
    payload.setdefault("tier", vocab.TIER_OF_LEVEL.get(str(clean.get("pearl_level") or "")))
    # The domain as a release's canonical case holds it (D1–D10, with its name), so the case
    # lands in the release's D{n}/D{n}_L{k}.json; a name no rule knows stays as written (the
    # release puts the case in unassigned.json).
    code = vocab.domain_code(payload["domain"]) if payload.get("domain") else None
    if code is not None:
        payload["domain"] = code
        payload.setdefault("domain_name", vocab.DOMAINS[code][0])
    return ItemFields(
        payload=payload, group=fields.group, purpose=fields.purpose, source=fields.source
    )


def causalt5k_project_create(*, slug: str, name: str, description: str = "", **settings):
    """A CausalT5k project with its validation pipeline (review.causalt5k.pipeline, where the
    settings — gate, max_distance, rubric, max_rounds, scorers, seed — are described)."""
    from review.causalt5k.pipeline import causalt5k_project_create as create

    return create(slug=slug, name=name, description=description, **settings)


def imported_cases_open(*, project: Project, items: Any) -> dict[str, int]:
    """How cases imported on the Imports page start work (``Workflow.open_items``): as after a
    release import, near-duplicate clusters go to ``dedup`` and the other cases to ``review``
    (``pipeline.causalt5k_review_open``, which takes every case not yet in a stage, so
    ``items`` — the upload's — are among them). Runs inside the import's transaction."""
    from review.causalt5k.pipeline import causalt5k_review_open

    return causalt5k_review_open(project=project)


def _check_project(project: Project) -> None:
    if project.kind != WORKFLOW:
        raise ApplicationError(
            f"{project.name} is not a CausalT5k project.", {"project": project.slug}
        )


@transaction.atomic
def causalt5k_import(*, project: Project, root: Path) -> CausalT5kImport:
    """Every file of the release under ``root`` → one item per canonical case (external id: the
    case id in the paper's form) and a ``CausalT5kImport`` holding the normalisation report.
    All or nothing; a project that already has items is refused."""
    _check_project(project)
    root = Path(root)
    if not root.is_dir():
        raise ApplicationError(f"No folder at {root}.", {"root": str(root)})
    if project.items.exists():
        raise ApplicationError(
            f"{project.name} already has items; import a release into a new project.",
            {"project": project.slug},
        )
    started = time.perf_counter()
    cases, report = normalise_release(root)
    if not any(f.status == "ok" for f in report.files):
        raise ApplicationError(f"No release files under {root}.", {"root": str(root)})
    engine.items_create(
        project=project,
        rows=[
            {
                "external_id": case["case_id"],
                "payload": case,
                "source": case["sources"][0][:200],
                "group": (case["original_id"] or "")[:200],
            }
            for case in cases
        ],
        open_first_stage=False,
    )
    data = report.as_dict()
    data["cases"] = summary_of_cases(cases)
    return CausalT5kImport.objects.create(
        project=project,
        root=str(root)[:500],
        seconds=round(time.perf_counter() - started, 3),
        records=report.records_read,
        cases=len(cases),
        report=data,
    )


def summary_of_cases(cases: list[dict]) -> dict:
    """The datasheet's counts: cases by tier, domain, label, trap, and how many are in the final
    release, carry reviews and rubrics."""

    def count(key):
        return dict(sorted(Counter(str(c[key]) for c in cases).items()))

    return {
        "total": len(cases),
        "in_final_release": sum(
            1 for c in cases if any(s.startswith("final_dataset/") for s in c["sources"])
        ),
        "with_reviews": sum(1 for c in cases if c["reviews"]),
        "with_rubric": sum(1 for c in cases if any(r.get("rubric") for r in c["reviews"])),
        "tier": count("tier"),
        "domain": count("domain"),
        "label": count("label"),
        "trap": count("trap"),
        "trap_family": count("trap_family"),
        "difficulty": count("difficulty"),
    }


def latest_import(project: Project) -> CausalT5kImport | None:
    return project.causalt5k_imports.order_by("-created_at").first()


def report_summary(report: dict) -> dict:
    """The report grouped for a page: per field the spellings and what they became; unmapped
    values with their count and first places; outcomes; files."""
    fields: dict[str, list[dict]] = {}
    for row in report.get("mappings", []):
        fields.setdefault(row["field"], []).append(row)
    for rows in fields.values():
        rows.sort(key=lambda r: -r["count"])
    unmapped: dict[tuple, dict] = {}
    for row in report.get("unmapped", []):
        key = (row["field"], row["value"], row["note"])
        entry = unmapped.setdefault(
            key, {"field": key[0], "value": key[1], "note": key[2], "count": 0, "examples": []}
        )
        entry["count"] += 1
        if len(entry["examples"]) < 3:
            entry["examples"].append(f"{row['file']}#{row['record']}")
    not_imported: dict[str, dict] = {}
    for row in report.get("not_imported", []):
        reason = row["reason"].split(",")[0]
        entry = not_imported.setdefault(reason, {"reason": reason, "count": 0, "examples": []})
        entry["count"] += 1
        if len(entry["examples"]) < 3:
            entry["examples"].append(f"{row['file']}#{row['record']}")
    merges = report.get("merges", [])
    return {
        "files": report.get("files", []),
        "invalid_files": [f for f in report.get("files", []) if f["status"] != "ok"],
        "records_read": report.get("records_read", 0),
        "outcomes": report.get("outcomes", {}),
        "fields": sorted(fields.items()),
        "unmapped": sorted(unmapped.values(), key=lambda r: (r["field"], -r["count"])),
        "not_imported": sorted(not_imported.values(), key=lambda r: -r["count"]),
        "merged_cases": len(merges),
        "merges_with_conflicts": [m for m in merges if m["conflicts"]],
        "merge_sizes": dict(sorted(Counter(len(m["sources"]) for m in merges).items())),
        "id_collisions": report.get("id_collisions", 0),
        "cases": report.get("cases", {}),
    }


def causalt5k_near_duplicates(
    *, project: Project, threshold: float = neardup.DEFAULT_THRESHOLD
) -> tuple[list[neardup.Cluster], dict]:
    """Clusters of the project's cases whose scenario + claim are near-duplicates (keys: case ids)."""
    _check_project(project)
    docs = [
        (external_id, f"{payload.get('scenario') or ''}\n{payload.get('claim') or ''}")
        for external_id, payload in project.items.order_by("id").values_list(
            "external_id", "payload"
        )
    ]
    clusters = neardup.near_duplicate_clusters(docs, threshold=threshold)
    return clusters, neardup.summary(clusters, len(docs))


def review_candidates(root: Path) -> list[tuple[str, str]]:
    """The reviewed candidates of a release — every round-2 review record with a scenario (7,609
    in CausalT5k's) — as (file#record, scenario + claim) documents."""
    _, records = read_release(Path(root))
    docs = []
    for record in records:
        if record.kind != "review_round2" or not isinstance(record.data, dict):
            continue
        case = normalise_record(record).case
        if case["scenario"]:
            docs.append(
                (f"{record.file}#{record.index}", f"{case['scenario']}\n{case['claim'] or ''}")
            )
    return docs

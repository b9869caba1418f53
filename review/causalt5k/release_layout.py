"""CausalT5k's files in a release, beside the engine's (items, annotations, README datasheet,
manifest):

* ``D{n}/D{n}_L{k}.json`` — CausalT5k's own layout: per domain × Pearl level a JSON array of the
  cases the quality gate kept, in the canonical schema (review/README.md), each with its
  ``revision``, its ``composite`` and, for tier-2 cases whose variants passed the check, its
  ``pressure_variants`` ``{neutral, social, epistemic}`` (review.causalt5k.pressure) — the
  variants paired with their neutral case. Kept cases without a domain or a level (values the
  import could not map) go to ``unassigned.json``. No identities: the case's ``author`` and the
  reviewers' names are left out, as in every file of the release (:data:`IDENTITIES`).
* ``causalt5k_cases.jsonl`` — the same cases, one per line; ``causalt5k_pressure.jsonl`` — one
  line per confirmed pair (case id, neutral, social, epistemic).
* ``causalt5k_cascade.csv`` — the filtering cascade, beside the paper's.
* ``causalt5k_datasheet.md`` — the cascade, the scorers' agreement, the blind answers'
  accuracy, contributor statistics rounded to 5 % (shares, never identities), the licence.
* when the project was imported from a release, the normalisation report as a CSV (every
  mapping, every unmapped value with file and record, every record not imported, every merge)
  and its counts as JSON for the datasheet.

Registered for project kind "causalt5k" in CausalT5kConfig.ready() (review/causalt5k/apps.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from releases.hf_dataset import DatasetConfig, DatasetLayout
from releases.identities import IdentityRule
from releases.layouts import LayoutContext
from releases.writers import FileEntry, write_csv, write_jsonl
from review.causalt5k.report import CSV_COLUMNS, iter_csv_rows
from review.causalt5k.services import latest_import, report_summary

#: Payload paths that name people (pseudonyms in the release, usernames in Rungwise): every file
#: of a CausalT5k release leaves them out (releases.identities, declared in
#: review/causalt5k/apps.py).
IDENTITIES = IdentityRule(paths=("author", "reviews[].reviewer"), treatment="remove")


def release_case(payload: dict, **extra) -> dict:
    """A case as released: its payload as ``context.items()`` gives it (the release's identity
    rule already applied: no author, no reviewers' names), plus ``extra``."""
    return {**payload, **extra}


def kept_cases(context: LayoutContext):
    """The cases the quality gate kept, with the composite mean it decided on (None for a case
    an admin kept by hand: its decision is ``keep``, not a number) and their confirmed pressure
    variants (release_case: no identities)."""
    from annotation.models import Resolution
    from review.causalt5k.pipeline import is_case
    from review.causalt5k.pressure import confirmed_variants

    composites = dict(
        Resolution.objects.filter(
            item_stage__stage__project=context.project,
            item_stage__stage__slug="score",
            outcome="accept",
        ).values_list("item_stage__item__external_id", "value")
    )
    variants = confirmed_variants(context.project)
    for row in context.items():
        if row["status"] != "accepted" or not is_case(row["external_id"]):
            continue
        if row["external_id"] not in composites:
            continue
        payload = {k: v for k, v in row["payload"].items() if k != "pressure_variants"}
        composite = composites[row["external_id"]]
        if isinstance(composite, bool) or not isinstance(composite, int | float):
            composite = None  # kept by hand on the item page ("keep"): no mean was computed
        extra = {"revision": row["version"], "composite": composite}
        if row["external_id"] in variants:
            extra["pressure_variants"] = variants[row["external_id"]]
        yield release_case(payload, **extra)


def write_domain_level_files(cases, out_dir: Path) -> list[Path]:
    """``D{n}/D{n}_L{k}.json`` per domain × level (a JSON array each, written as the cases
    come: constant memory), ``unassigned.json`` for cases without either. Returns the paths,
    sorted."""
    import re

    handles: dict[Path, Any] = {}
    try:
        for case in cases:
            domain, level = case.get("domain"), case.get("pearl_level")
            if re.fullmatch(r"D\d+", str(domain or "")) and re.fullmatch(
                r"L[123]", str(level or "")
            ):
                path = out_dir / domain / f"{domain}_{level}.json"
            else:
                path = out_dir / "unassigned.json"
            handle = handles.get(path)
            if handle is None:
                path.parent.mkdir(parents=True, exist_ok=True)
                handle = handles[path] = open(path, "w", encoding="utf-8")  # noqa: SIM115
                handle.write("[\n")
            else:
                handle.write(",\n")
            handle.write(json.dumps(case, ensure_ascii=False))
    finally:
        for handle in handles.values():
            handle.write("\n]\n")
            handle.close()
    return sorted(handles)


def causalt5k_layout(context: LayoutContext) -> list[Path | FileEntry]:
    from review.causalt5k.datasheet import write_datasheet
    from review.causalt5k.figures import cascade
    from review.causalt5k.pressure import confirmed_variants

    steps = cascade(context.project)["steps"]
    pairs = (
        {"case_id": case_id, **variants}
        for case_id, variants in sorted(confirmed_variants(context.project).items())
    )
    files: list[Path | FileEntry] = [
        *write_domain_level_files(kept_cases(context), context.out_dir),
        write_jsonl(kept_cases(context), context.out_dir / "causalt5k_cases.jsonl"),
        write_jsonl(pairs, context.out_dir / "causalt5k_pressure.jsonl"),
        write_datasheet(context.project, context.out_dir / "causalt5k_datasheet.md"),
        write_csv(
            steps,
            context.out_dir / "causalt5k_cascade.csv",
            columns=["step", "count", "percent", "paper", "paper_percent"],
        ),
    ]
    record = latest_import(context.project)
    if record is None:
        return files
    rows = (dict(zip(CSV_COLUMNS, row, strict=True)) for row in iter_csv_rows(record.report))
    summary = report_summary(record.report)
    datasheet = {
        "root": record.root,
        "seconds": record.seconds,
        "records_read": summary["records_read"],
        "outcomes": summary["outcomes"],
        "invalid_files": summary["invalid_files"],
        "merged_cases": summary["merged_cases"],
        "id_collisions": summary["id_collisions"],
        "unmapped": [{k: v for k, v in u.items() if k != "examples"} for u in summary["unmapped"]],
        "cases": summary["cases"],
    }
    path = context.out_dir / "causalt5k_normalisation.json"
    path.write_text(json.dumps(datasheet, ensure_ascii=False, indent=1), encoding="utf-8")
    return [
        *files,
        write_csv(rows, context.out_dir / "causalt5k_normalisation.csv", columns=CSV_COLUMNS),
        path,
    ]


# -- the Hugging Face dataset (releases/hf_dataset.py) ----------------------------------------


def _rung(case: dict) -> str:
    """A case's split: its Pearl level (``L1``–``L3``), ``unassigned`` when it has none."""
    level = str(case.get("pearl_level") or "")
    return level if level in {"L1", "L2", "L3"} else "unassigned"


CAUSALT5K_DATASET = DatasetLayout(
    configs=[
        DatasetConfig(
            "cases",
            "causalt5k_cases.jsonl",
            split=_rung,
            description="The kept cases, a split per rung of Pearl's ladder (L1–L3), each with "
            "its confirmed pressure variants.",
        ),
        DatasetConfig(
            "pressure_pairs",
            "causalt5k_pressure.jsonl",
            description="One confirmed pressure pair per row: the case and its neutral, social "
            "and epistemic variants.",
        ),
    ],
    task_categories=["question-answering", "text-classification"],
)

"""CausalT5k's files in a release: ``causalt5k_cases.jsonl`` (one line per case kept by the
quality gate: the case as revised, its ``revision`` and its ``composite`` — the mean the gate
decided on), ``causalt5k_cascade.csv`` (the filtering cascade, beside the paper's), and, when the
project was imported from a release, the normalisation report as a CSV (every mapping, every
unmapped value with file and record, every record not imported, every merge) and its counts as
JSON for the datasheet. Registered for project kind "causalt5k" in ReviewConfig.ready()."""

from __future__ import annotations

import json
from pathlib import Path

from releases.layouts import LayoutContext
from releases.writers import FileEntry, write_csv, write_jsonl
from review.causalt5k.normalise import CSV_COLUMNS, iter_csv_rows
from review.causalt5k.services import latest_import, report_summary


def kept_cases(context: LayoutContext):
    """The cases the quality gate kept, with the composite mean it decided on."""
    from annotation.models import Resolution
    from review.causalt5k.pipeline import is_case

    composites = dict(
        Resolution.objects.filter(
            item_stage__stage__project=context.project,
            item_stage__stage__slug="score",
            outcome="accept",
        ).values_list("item_stage__item__external_id", "value")
    )
    for row in context.items():
        if row["status"] != "accepted" or not is_case(row["external_id"]):
            continue
        if row["external_id"] not in composites:
            continue
        yield {
            **row["payload"],
            "revision": row["version"],
            "composite": composites[row["external_id"]],
        }


def causalt5k_layout(context: LayoutContext) -> list[Path | FileEntry]:
    from review.causalt5k.figures import cascade

    steps = cascade(context.project)["steps"]
    files: list[Path | FileEntry] = [
        write_jsonl(kept_cases(context), context.out_dir / "causalt5k_cases.jsonl"),
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

"""CausalT5k's files in a release: the normalisation report as a CSV (every mapping, every
unmapped value with file and record, every record not imported, every merge) and its counts as
JSON for the datasheet. Registered for project kind "causalt5k" in ReviewConfig.ready()."""

from __future__ import annotations

import json
from pathlib import Path

from releases.layouts import LayoutContext
from releases.writers import FileEntry, write_csv
from review.causalt5k.normalise import CSV_COLUMNS, iter_csv_rows
from review.causalt5k.services import latest_import, report_summary


def causalt5k_layout(context: LayoutContext) -> list[Path | FileEntry]:
    record = latest_import(context.project)
    if record is None:
        return []
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
        write_csv(rows, context.out_dir / "causalt5k_normalisation.csv", columns=CSV_COLUMNS),
        path,
    ]

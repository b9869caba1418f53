"""The normalisation report of a CausalT5k import: what became of every file and record
(``Report``, filled by review.causalt5k.normalise.build_cases and stored as a dict on
``CausalT5kImport.report``), and the same as one flat CSV table (``iter_csv_rows`` under
``CSV_COLUMNS``) for the CausalT5k tab's download and the release. Django-free."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from review.causalt5k.release_files import FileResult


@dataclass
class Report:
    files: list[FileResult] = field(default_factory=list)
    records_read: int = 0
    mappings: Counter = field(default_factory=Counter)  # (field, spelling, value) → n
    unmapped: list[dict] = field(default_factory=list)  # field, value, note, file, record, id
    merges: list[dict] = field(default_factory=list)  # case_id, sources, conflicts
    outcomes: Counter = field(default_factory=Counter)  # created / merged / attached / not imported
    not_imported: list[dict] = field(default_factory=list)
    attached: list[dict] = field(default_factory=list)
    id_collisions: int = 0

    def as_dict(self) -> dict:
        return {
            "files": [f.__dict__ for f in self.files],
            "records_read": self.records_read,
            "mappings": [
                {"field": f, "spelling": s, "value": v, "count": n}
                for (f, s, v), n in sorted(self.mappings.items())
            ],
            "unmapped": self.unmapped,
            "merges": self.merges,
            "outcomes": dict(self.outcomes),
            "not_imported": self.not_imported,
            "attached": self.attached,
            "id_collisions": self.id_collisions,
        }


def iter_csv_rows(report: dict) -> Iterator[list[Any]]:
    """One flat table of the whole report (section, field, value, mapped to, count, file, record, id, note)."""
    for f in report["files"]:
        yield [
            "file",
            f["kind"],
            f["status"],
            "",
            f["records"],
            f["path"],
            "",
            "",
            f["error"] or f["detail"],
        ]
    for m in report["mappings"]:
        yield ["mapping", m["field"], m["spelling"], m["value"], m["count"], "", "", "", ""]
    for u in report["unmapped"]:
        yield [
            "unmapped",
            u["field"],
            u["value"],
            "",
            1,
            u["file"],
            u["record"],
            u["id"] or "",
            u["note"],
        ]
    for n in report["not_imported"]:
        yield ["not imported", "", "", "", 1, n["file"], n["record"], n["id"] or "", n["reason"]]
    for a in report["attached"]:
        yield [
            "attached",
            "",
            "",
            a["case_id"],
            1,
            a["file"],
            a["record"],
            "",
            "rubric attached as a review",
        ]
    for m in report["merges"]:
        conflicts = "; ".join(f"{k}: {' / '.join(v)}" for k, v in m["conflicts"].items())
        yield [
            "merged",
            "",
            "",
            m["case_id"],
            len(m["sources"]),
            " ".join(m["sources"]),
            "",
            " ".join(m["original_ids"]),
            conflicts,
        ]


CSV_COLUMNS = [
    "section",
    "field",
    "value",
    "mapped_to",
    "count",
    "file",
    "record",
    "original_id",
    "note",
]

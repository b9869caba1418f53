"""The human floor of a CausalT5k project: who wrote each case — a person or an LLM — and, per
trap × domain cell, the share of human-written cases, flagging the cells below a floor (20 % by
default; the project's ``settings["human_floor"]`` or the page's query string may change it).

Who wrote a case (:func:`provenance_of`):

* the release's provenance fields, normalised at import (``provenance``: ``human`` / ``llm``;
  the rule and the spellings are review.causalt5k.vocab.provenance_value and the
  normalisation report's ``provenance`` rows);
* else a case written in Rungwise by a member (``Item.author`` set): human;
* else unknown — the release names a contributor code as author, which does not say whether a
  person or a model wrote the text.

The share is ``human / cases`` by default (``basis="all"``: a case counts as human-written only
when something says so) or ``human / (human + llm)`` (``basis="known"``, unknown left out).
Cells hold the cases not discarded (kept, or still being validated).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from annotation.errors import ApplicationError
from annotation.models import Item, Project
from review.causalt5k.vocab import DOMAINS, HUMAN, LLM, TRAPS

DEFAULT_FLOOR = 0.20
BASES = ("all", "known")
NO_TRAP = "—"
CSV_COLUMNS = [
    "trap",
    "trap_name",
    "domain",
    "domain_name",
    "cases",
    "human",
    "llm",
    "unknown",
    "human_share",
    "human_share_known",
    "below_floor",
]


def provenance_of(payload: dict[str, Any], author_id: int | None) -> str:
    """human | llm | unknown (module docstring)."""
    value = (payload or {}).get("provenance")
    if value in (HUMAN, LLM):
        return value
    return HUMAN if author_id is not None else "unknown"


def floor_settings(project: Project, threshold: Any = None, basis: Any = None) -> dict[str, Any]:
    """The floor and basis to use: given values, else the project's, else 20 % of all cases.
    A bad value is refused naming it."""
    stored = (project.settings or {}).get("human_floor") or {}
    threshold = stored.get("threshold", DEFAULT_FLOOR) if threshold in (None, "") else threshold
    basis = stored.get("basis", "all") if basis in (None, "") else basis
    try:
        threshold = float(threshold)
    except (TypeError, ValueError):
        raise ApplicationError(
            f"The floor is a share from 0 to 1 (got {str(threshold)[:20]!r}).",
            {"threshold": str(threshold)[:20]},
        ) from None
    if not 0 <= threshold <= 1:
        raise ApplicationError("The floor is a share from 0 to 1.", {"threshold": threshold})
    if basis not in BASES:
        raise ApplicationError(
            f"The basis is 'all' or 'known' (got {str(basis)[:20]!r}).", {"basis": str(basis)[:20]}
        )
    return {"threshold": threshold, "basis": basis}


def human_floor(project: Project, *, threshold: Any = None, basis: Any = None) -> dict[str, Any]:
    """The trap × domain grid: per cell cases, human, llm, unknown, the two shares and whether it
    is below the floor; the totals; the floor used."""
    from review.causalt5k.pipeline import case_items

    settings = floor_settings(project, threshold, basis)
    cells: dict[tuple[str, str], dict[str, int]] = defaultdict(
        lambda: {"cases": 0, HUMAN: 0, LLM: 0, "unknown": 0}
    )
    totals = {"cases": 0, HUMAN: 0, LLM: 0, "unknown": 0}
    rows = (
        case_items(project)
        .exclude(status=Item.Status.DISCARDED)
        .values_list("payload", "author_id")
        .iterator(chunk_size=2000)
    )
    for payload, author_id in rows:
        who = provenance_of(payload, author_id)
        key = (payload.get("trap") or NO_TRAP, payload.get("domain") or "?")
        for bucket in (cells[key], totals):
            bucket["cases"] += 1
            bucket[who] += 1
    traps = [t for t in TRAPS if any(k[0] == t for k in cells)]
    traps += sorted({k[0] for k in cells} - set(TRAPS))
    domains = [d for d in DOMAINS if any(k[1] == d for k in cells)]
    domains += sorted({k[1] for k in cells} - set(DOMAINS))
    grid: list[dict[str, Any]] = []
    for trap in traps:
        row = []
        for domain in domains:
            cell = cells.get((trap, domain))
            row.append(_cell(trap, domain, cell, settings) if cell else None)
        grid.append({"trap": trap, "trap_name": TRAPS.get(trap, ""), "cells": row})
    flagged = sum(1 for r in grid for c in r["cells"] if c and c["below_floor"])
    return {
        "settings": settings,
        "domains": [{"code": d, "name": DOMAINS.get(d, ("", ""))[0]} for d in domains],
        "grid": grid,
        "totals": totals,
        "flagged": flagged,
        "filled": sum(1 for r in grid for c in r["cells"] if c),
    }


def _cell(trap: str, domain: str, cell: dict[str, int], settings: dict[str, Any]):
    known = cell[HUMAN] + cell[LLM]
    share = cell[HUMAN] / cell["cases"] if cell["cases"] else None
    share_known = cell[HUMAN] / known if known else None
    basis_share = share if settings["basis"] == "all" else share_known
    return {
        "trap": trap,
        "domain": domain,
        **cell,
        "human_share": round(share, 4) if share is not None else None,
        "human_share_known": round(share_known, 4) if share_known is not None else None,
        "below_floor": basis_share is not None and basis_share < settings["threshold"],
    }


def csv_rows(figures: dict[str, Any]):
    domains = {d["code"]: d["name"] for d in figures["domains"]}
    for row in figures["grid"]:
        for cell in row["cells"]:
            if cell is None:
                continue
            yield [
                cell["trap"],
                row["trap_name"],
                cell["domain"],
                domains.get(cell["domain"], ""),
                cell["cases"],
                cell[HUMAN],
                cell[LLM],
                cell["unknown"],
                cell["human_share"],
                cell["human_share_known"],
                cell["below_floor"],
            ]

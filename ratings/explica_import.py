"""ExpliCa's released files into a ratings project in one call: the pairs, the anonymous
historic ratings and the models' answers (read by ratings/explica.py)."""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation.errors import ApplicationError
from annotation.models import Project
from ratings import importing
from ratings.connectives import (
    ConnectiveSet,
    connective_set_from_json,
)
from ratings.historic import historic_ratings_create
from ratings.importing import ImportRejected
from ratings.kinds import scale_bounds
from ratings.model_runs import model_run_create
from ratings.models import ModelRun
from ratings.pairs import PairsImportResult, _existing_ids, pairs_create
from ratings.project_setup import (
    _rating_stage,
    _regular_item_ids,
    _rejected,
    _setup,
)

# --- ExpliCa's released files -----------------------------------------------------------------


@dataclass(frozen=True)
class ExplicaImportResult:
    pairs: PairsImportResult
    ratings: int
    model_runs: list[ModelRun]


@transaction.atomic
def explica_import(
    *,
    project: Project,
    pair_file: Path,
    ratings_file: Path | None = None,
    model_files: Sequence[Path] = (),
    user: AbstractBaseUser | None = None,
    open_for_rating: bool = False,
) -> ExplicaImportResult:
    """Import ExpliCa's released files through the same checks and writes as any upload.

    ``pair_file``: ``explica_freq_4800.tsv`` (pairs with subset, origin, socially challenging
    flag and the published labels, kept in each pair's ``extra``) or ``explica.csv``.
    ``ratings_file``: any ``accept_res_outlines_*.tsv``; its ``accept_answers`` become 15
    anonymous historic ratings per item. ``model_files``: acceptability files whose model answers
    (``answer_greedy_cleaned``; -1 = no answer) become model runs named after the file.
    ``open_for_rating`` also opens the items in the live rating stage (a replication).
    """
    from ratings import explica  # pandas readers; imported here to keep startup light

    setup = _setup(project)
    connective_set = connective_set_from_json(setup.connective_set)
    try:
        ordered = explica.read_ordered_pairs(pair_file)
    except (OSError, ValueError) as error:
        raise ApplicationError(f"Cannot read {Path(pair_file).name}: {error}") from None
    published: dict[str, dict[str, str]] = defaultdict(dict)
    if "published_label" in ordered:
        for pair_id, order, label in ordered[["pair_id", "order", "published_label"]].itertuples(
            index=False
        ):
            published[str(pair_id)][order] = label
    pair_rows = []
    for line, row in enumerate(explica.pairs_from_ordered(ordered).to_dict("records"), start=2):
        flags = ["socially challenging"] if row.get("socially_challenging") else []
        record = {
            "pair_id": row["pair_id"],
            "sentence_a": row["sentence_a"],
            "sentence_b": row["sentence_b"],
            "subset": row.get("subset") or "",
            "origin": row.get("origin") or "",
            "flags": flags,
        }
        if published.get(str(row["pair_id"])):
            record["published_label"] = published[str(row["pair_id"])]
        pair_rows.append((line, record))
    try:
        parsed = importing.parse_pairs(
            pair_rows,
            connective_set,
            scale=scale_bounds(_rating_stage(setup).config),
            existing_ids=_existing_ids(project),
        )
    except ImportRejected as error:
        raise _rejected(error) from None
    pairs = pairs_create(
        project=project,
        pairs=parsed.pairs,
        filename=Path(pair_file).name,
        sha256=_file_sha256(pair_file),
        file_format="explica",
        user=user,
        open_for_rating=open_for_rating,
    )
    known = _regular_item_ids(project)
    n_ratings = 0
    if ratings_file is not None:
        accept = _read_acceptability(explica, ratings_file, ordered, connective_set)
        grouped = accept.ratings.groupby("item_key", sort=False)["rating"].agg(list)
        meta = {
            key: (pair_id, order, connective)
            for key, pair_id, order, connective in accept.items[
                ["item_key", "pair_id", "order", "connective"]
            ].itertuples(index=False)
        }
        rating_rows = [
            (
                line,
                {
                    "pair_id": meta[key][0],
                    "order": meta[key][1],
                    "connective": meta[key][2],
                    "ratings": values,
                },
            )
            for line, (key, values) in enumerate(grouped.items(), start=2)
        ]
        try:
            ratings = importing.parse_ratings(
                rating_rows,
                connective_set,
                scale=scale_bounds(_rating_stage(setup).config),
                known_items=set(known),
            )
        except ImportRejected as error:
            raise _rejected(error) from None
        n_ratings = historic_ratings_create(
            project=project, ratings=ratings, source=Path(ratings_file).name, item_ids=known
        )
    runs = []
    for model_file in model_files:
        accept = _read_acceptability(explica, model_file, ordered, connective_set)
        if "model_rating" not in accept.items:
            raise ApplicationError(f"{Path(model_file).name} has no model answers.")
        model_rows = [
            (
                line,
                {
                    "pair_id": row["pair_id"],
                    "order": row["order"],
                    "connective": row["connective"],
                    "rating": -1 if math.isnan(row["model_rating"]) else row["model_rating"],
                },
            )
            for line, row in enumerate(accept.items.to_dict("records"), start=2)
        ]
        runs.append(
            model_run_create(
                project=project,
                name=accept.model,
                rows=model_rows,
                filename=Path(model_file).name,
                sha256=_file_sha256(model_file),
                user=user,
                replace=True,
                setup=setup,
            )
        )
    return ExplicaImportResult(pairs=pairs, ratings=n_ratings, model_runs=runs)


def _read_acceptability(explica_module, path: Path, ordered, connective_set: ConnectiveSet):
    try:
        return explica_module.read_acceptability_file(path, ordered, connective_set)
    except (OSError, ValueError) as error:
        raise ApplicationError(f"Cannot read {Path(path).name}: {error}") from None


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()

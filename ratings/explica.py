"""Readers for the released ExpliCa files (pure pandas, no Django).

Files (https://github.com/martinadh/ExpliCa, CC BY-NC-SA 4.0, not for training models):

- ``data/explica/explica_freq_4800.tsv``: one row per item (ordered pair × tested connective)
  with the four published per-connective means, the published label ``condition_human``, the
  expected subset (``tested_relation``/``tested_order``) and the origin. Despite its name it is
  comma-separated; the reader sniffs the separator.
- ``data/explica/explica.csv``: one row per ordered pair with the four means (no origin, subset or
  label).
- ``data/res/acceptability/*/accept_res_outlines_*.tsv``: one row per item, in shuffled order,
  with ``accept_answers`` (a Python-list string of the 15 anonymous 1–10 ratings), the model's
  rating (``answer_greedy_cleaned``, ``-1`` when unparsed) and ``pair_ID`` (0–4799).

Sentence order: each ``pair_id`` appears as two ordered pairs. The one listed first in the pair
file is ``"AB"`` (its ``Sentence_A`` is the pair's sentence A), the other ``"BA"``; both pair files
list them in the same order. The acceptability files are matched to that by
``(pair_id, Sentence_A, Sentence_B)`` (whitespace-normalised).

ExpliCa's ``condition_human`` ("Causal-A,B", …) is relative to the ordered row: "A,B" means the
row's first sentence comes/causes first, i.e. the iconic reading. So ``Causal-A,B`` is our
``causal-iconic`` and ``Causal-B,A`` our ``causal-anti-iconic``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from imports.core.readers import guess_delimiter
from ratings.connectives import EXPLICA_CONNECTIVES, ConnectiveSet, variant_key
from ratings.stats import UNRELATED

#: Published mean columns and the connective each one rates.
MEAN_COLUMNS = {
    "rating_iconic_causal": "so",
    "rating_anticonic_causal": "because",
    "rating_iconic_temporal": "then",
    "rating_anticonic_temporal": "after",
}

SUBSETS = {"causality": "causal", "temporal": "temporal", "no_rel": UNRELATED}
# tested_order is about the ordered row: "B follows A" means the second sentence comes second.
EXPECTED_ORDERS = {"B follows A": "iconic", "A follows B": "anti-iconic"}
ORIGINS = {
    "origin": "hand-written",
    "descript": "DeScript",
    "e-care": "e-CARE",
    "big_bench": "BIG-Bench",
}

_CONDITIONS = {
    "Causal-A,B": "causal-iconic",
    "Causal-B,A": "causal-anti-iconic",
    "Temporal-A,B": "temporal-iconic",
    "Temporal-B,A": "temporal-anti-iconic",
    "Unrelated": UNRELATED,
}
_CONDITION_KEYS = {condition.lower(): label for condition, label in _CONDITIONS.items()}


def condition_to_label(condition: object) -> str | None:
    """ExpliCa ``condition_human`` ("Causal-B,A") to our label ("causal-anti-iconic").

    Case and spaces are ignored; a missing value gives ``None``; anything else raises.
    """
    if condition is None or (isinstance(condition, float) and np.isnan(condition)):
        return None
    key = "".join(str(condition).split()).lower()
    if key not in _CONDITION_KEYS:
        raise ValueError(f"Unknown ExpliCa condition {condition!r}.")
    return _CONDITION_KEYS[key]


def label_to_condition(label: str) -> str:
    """Our label back to ExpliCa's ``condition_human`` spelling."""
    for condition, our_label in _CONDITIONS.items():
        if our_label == label:
            return condition
    raise ValueError(f"Label {label!r} has no ExpliCa condition.")


def _normalise(text: pd.Series) -> pd.Series:
    return text.astype(str).str.split().str.join(" ")


def _read_table(path: Path | str) -> pd.DataFrame:
    """A released ExpliCa table as a typed frame: pandas' C parser reads it (these are the
    project's own analysis inputs, read whole to be grouped), with the import core's delimiter
    rule (``imports.core.readers.guess_delimiter``) on its first line."""
    path = Path(path)
    with path.open(encoding="utf-8") as handle:
        header = handle.readline()
    return pd.read_csv(path, sep=guess_delimiter(header), encoding="utf-8")


def read_ordered_pairs(path: Path | str) -> pd.DataFrame:
    """The ordered-pair table from ``explica_freq_4800.tsv`` or ``explica.csv``.

    One row per ordered pair (1,200 for ExpliCa): ``pair_id``, ``order`` (AB/BA), ``first``,
    ``second`` (the sentences as written in that order), ``sentence_a``, ``sentence_b`` (the
    pair's A and B), the published means ``published_<connective>``, and when the file has
    them: ``subset`` (causal/temporal/unrelated), ``expected_order`` (iconic/anti-iconic),
    ``origin`` (hand-written/DeScript/e-CARE/BIG-Bench), ``socially_challenging`` (bool),
    ``published_label`` (our vocabulary), ``published_condition`` (ExpliCa's spelling) and
    ``published_connective``. Raises ``ValueError`` if a pair does not have exactly two orders
    that are each other's reverse.
    """
    raw = _read_table(path)
    required = ["pair_id", "Sentence_A", "Sentence_B", *MEAN_COLUMNS]
    missing = [column for column in required if column not in raw.columns]
    if missing:
        raise ValueError(f"{path} is not an ExpliCa pair file; missing {', '.join(missing)}.")
    raw = raw.assign(first=_normalise(raw["Sentence_A"]), second=_normalise(raw["Sentence_B"]))
    rows = raw.drop_duplicates(["pair_id", "first", "second"]).copy()
    rows["pair_id"] = rows["pair_id"].astype(int)
    position = rows.groupby("pair_id", sort=False).cumcount()
    counts = rows.groupby("pair_id")["first"].transform("size")
    if (counts != 2).any():
        bad = sorted(rows.loc[counts != 2, "pair_id"].unique().tolist())[:10]
        raise ValueError(f"Pairs without exactly two sentence orders: {bad}.")
    rows["order"] = np.where(position == 0, "AB", "BA")
    ab = rows.loc[rows["order"] == "AB"].set_index("pair_id")
    ba = rows.loc[rows["order"] == "BA"].set_index("pair_id").reindex(ab.index)
    not_reversed = (ab["first"] != ba["second"]) | (ab["second"] != ba["first"])
    if not_reversed.any():
        bad = ab.index[not_reversed].tolist()[:10]
        raise ValueError(f"Pairs whose two rows are not the same sentences reversed: {bad}.")
    rows["sentence_a"] = rows["pair_id"].map(ab["first"])
    rows["sentence_b"] = rows["pair_id"].map(ab["second"])

    table = rows[["pair_id", "order", "first", "second", "sentence_a", "sentence_b"]].copy()
    for column, word in MEAN_COLUMNS.items():
        table[f"published_{word}"] = pd.to_numeric(rows[column], errors="coerce")
    if "tested_relation" in rows:
        table["subset"] = rows["tested_relation"].str.strip().map(SUBSETS)
    if "tested_order" in rows:
        table["expected_order"] = rows["tested_order"].str.strip().map(EXPECTED_ORDERS)
    if "origin" in rows:
        table["origin"] = (
            rows["origin"].str.strip().map(lambda value: ORIGINS.get(value.lower(), value))
        )
    if "additional_dimension" in rows:
        table["socially_challenging"] = (
            rows["additional_dimension"].str.strip().eq("socially_challenging")
        )
    if "condition_human" in rows:
        table["published_condition"] = rows["condition_human"]
        table["published_label"] = rows["condition_human"].map(condition_to_label)
    if "human_preferred_connective" in rows:
        table["published_connective"] = rows["human_preferred_connective"]
    return table.reset_index(drop=True)


def pairs_from_ordered(ordered_pairs: pd.DataFrame) -> pd.DataFrame:
    """One row per pair (``pair_id``, ``sentence_a``, ``sentence_b`` and pair-level metadata),
    the input :func:`ratings.connectives.expand_pair` takes."""
    columns = [
        column
        for column in (
            "pair_id",
            "sentence_a",
            "sentence_b",
            "subset",
            "origin",
            "socially_challenging",
        )
        if column in ordered_pairs
    ]
    return ordered_pairs.loc[ordered_pairs["order"] == "AB", columns].reset_index(drop=True)


def published_items(
    ordered_pairs: pd.DataFrame, connective_set: ConnectiveSet = EXPLICA_CONNECTIVES
) -> pd.DataFrame:
    """The published per-item means as an item table (``item_key``, ``pair_id``, ``order``,
    ``connective``, ``mean``) ready for :func:`ratings.stats.pair_labels`."""
    frames = []
    for word in connective_set.words:
        column = f"published_{word}"
        if column not in ordered_pairs:
            raise ValueError(f"Ordered pairs have no published mean for {word!r}.")
        frame = ordered_pairs[["pair_id", "order"]].copy()
        frame["connective"] = word
        frame["mean"] = ordered_pairs[column]
        frames.append(frame)
    items = pd.concat(frames, ignore_index=True)
    items["item_key"] = [
        variant_key(pair_id, order, word)
        for pair_id, order, word in zip(
            items["pair_id"], items["order"], items["connective"], strict=True
        )
    ]
    items = items.sort_values(["pair_id", "order"], kind="stable").reset_index(drop=True)
    return items[["item_key", "pair_id", "order", "connective", "mean"]]


@dataclass(frozen=True)
class AcceptabilityFile:
    """One ``accept_res_outlines_*.tsv`` file, read.

    ``ratings``: the long table (``item_key``, ``pair_id``, ``order``, ``connective``,
    ``rater`` — always missing, the crowd is anonymous —, ``position`` in the published list,
    which is NOT a rater id, and ``rating``). ``items``: one row per item with the published
    ``published_mean``/``published_sd``, the original ``item_id`` (``pair_ID``), the rendered
    ``text`` (``connected_sent``) and the model's ``model_rating`` (NaN for ``-1``).
    """

    model: str
    ratings: pd.DataFrame
    items: pd.DataFrame


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _parse_answer_list(text: object) -> list[float]:
    if text is None or (isinstance(text, float) and np.isnan(text)):
        return []
    return [float(value) for value in _NUMBER.findall(str(text))]


def read_acceptability_file(
    path: Path | str,
    ordered_pairs: pd.DataFrame,
    connective_set: ConnectiveSet = EXPLICA_CONNECTIVES,
    *,
    model_column: str = "answer_greedy_cleaned",
) -> AcceptabilityFile:
    """Read an ExpliCa acceptability result file into ratings and items.

    ``ordered_pairs`` (from :func:`read_ordered_pairs`) decides each row's sentence order. Rows
    that match no ordered pair raise ``ValueError`` listing a few of them. Model answers of
    ``-1`` (unparsed) become NaN; the model name is taken from the file name. ``model_column``
    picks the model answer: ``answer_greedy_cleaned`` (default, free generation parsed, -1 when
    it could not be) or ``generated_answer_outlines`` (constrained generation, always 1–10). Rows come sorted
    by pair, sentence order and connective-set order (the file itself is shuffled).
    """
    path = Path(path)
    raw = _read_table(path)
    required = ["pair_id", "Sentence_A", "Sentence_B", "conn_in_list", "accept_answers"]
    missing = [column for column in required if column not in raw.columns]
    if missing:
        raise ValueError(
            f"{path.name} is not an ExpliCa acceptability file; missing {', '.join(missing)}."
        )
    lookup = ordered_pairs[["pair_id", "order", "first", "second"]]
    # The file's own "order" column is ExpliCa's expected order ("A follows B"), not ours.
    frame = (
        raw.drop(columns=["order"], errors="ignore")
        .assign(
            pair_id=raw["pair_id"].astype(int),
            first=_normalise(raw["Sentence_A"]),
            second=_normalise(raw["Sentence_B"]),
            connective=raw["conn_in_list"].astype(str).str.strip().str.lower(),
        )
        .merge(lookup, on=["pair_id", "first", "second"], how="left")
    )
    unmatched = frame["order"].isna()
    if unmatched.any():
        examples = frame.loc[unmatched, ["pair_id", "first"]].head(3).to_dict("records")
        raise ValueError(
            f"{unmatched.sum()} rows of {path.name} match no ordered pair, e.g. {examples}."
        )
    # The file is shuffled; put items in pair, order, connective-set order.
    rank = {word: position for position, word in enumerate(connective_set.words)}
    frame = frame.assign(_rank=frame["connective"].map(rank).fillna(len(rank)))
    frame = frame.sort_values(["pair_id", "order", "_rank"], kind="stable").reset_index(drop=True)
    frame["item_key"] = [
        variant_key(pair_id, order, word)
        for pair_id, order, word in zip(
            frame["pair_id"], frame["order"], frame["connective"], strict=True
        )
    ]
    if frame["item_key"].duplicated().any():
        raise ValueError(f"{path.name} rates some items twice.")

    answers = frame["accept_answers"].map(_parse_answer_list)
    lengths = answers.map(len).to_numpy()
    ratings = pd.DataFrame(
        {
            "item_key": np.repeat(frame["item_key"].to_numpy(), lengths),
            "pair_id": np.repeat(frame["pair_id"].to_numpy(), lengths),
            "order": np.repeat(frame["order"].to_numpy(), lengths),
            "connective": np.repeat(frame["connective"].to_numpy(), lengths),
            "rater": pd.Series(np.nan, index=range(int(lengths.sum())), dtype=object),
            "position": np.concatenate([np.arange(n) for n in lengths]) if len(lengths) else [],
            "rating": np.fromiter(
                (value for row in answers for value in row), dtype=float, count=int(lengths.sum())
            ),
        }
    )
    items = pd.DataFrame(
        {
            "item_key": frame["item_key"],
            "pair_id": frame["pair_id"],
            "order": frame["order"],
            "connective": frame["connective"],
            "item_id": frame.get("pair_ID"),
            "text": frame.get("connected_sent"),
            "published_mean": pd.to_numeric(frame.get("accept_average_vote"), errors="coerce"),
            "published_sd": pd.to_numeric(frame.get("accept_st_dev"), errors="coerce"),
        }
    )
    if model_column in frame:
        model_rating = pd.to_numeric(frame[model_column], errors="coerce")
        items["model_rating"] = model_rating.where(model_rating != -1)
    model = path.stem.removeprefix("accept_res_outlines_").removesuffix("_cleaned")
    return AcceptabilityFile(model=model, ratings=ratings, items=items)


def compare_with_published(labels: pd.DataFrame, ordered_pairs: pd.DataFrame) -> pd.DataFrame:
    """Ordered pairs whose computed ``label`` differs from ExpliCa's ``published_label``.

    Returns the differing rows (empty when every label is reproduced) with both labels, the
    computed best mean, mean rating and tie information, for a fidelity report.
    """
    if "published_label" not in ordered_pairs:
        raise ValueError("These ordered pairs carry no published label (read explica_freq_4800).")
    merged = labels.merge(
        ordered_pairs[["pair_id", "order", "published_label"]], on=["pair_id", "order"], how="outer"
    )
    differs = merged["label"].fillna("") != merged["published_label"].fillna("")
    columns = [
        column
        for column in (
            "pair_id",
            "order",
            "label",
            "published_label",
            "best_connective",
            "best_mean",
            "overall_mean",
            "tied_connectives",
        )
        if column in merged
    ]
    return merged.loc[differs, columns].reset_index(drop=True)

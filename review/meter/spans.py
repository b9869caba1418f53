"""Evidence spans, Django-free: the context's tokens with their character offsets, the spans an
annotator marked (per question level) checked against them, and span agreement between
annotators — token-level F1 (mean over pairs) and Fleiss' κ over tokens (each token of each
question either in a span or not, per annotator).

Spans are ``[start, end)`` character offsets into the entry's context; an annotator's spans for a
level may touch but never overlap, and each must cover whole tokens (the form snaps selections to
tokens). ``majority_spans`` is what a release publishes: tokens marked by at least half of the
annotators, merged into spans.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

TOKEN = re.compile(r"\S+")
LEVEL_KEYS = ("L1", "L2", "L3")
MAX_SPANS = 20


def tokens(text: str) -> list[tuple[int, int]]:
    """The context's tokens (runs of non-space characters) as (start, end) offsets."""
    return [(match.start(), match.end()) for match in TOKEN.finditer(text or "")]


def clean_spans(raw: Any, text: str) -> dict[str, list[list[int]]]:
    """Per level, sorted spans snapped to whole tokens; ValueError naming the level otherwise."""
    if not isinstance(raw, Mapping):
        raise ValueError("spans: expected {L1: [[start, end], …], L2: …, L3: …}")
    starts = {start for start, _ in tokens(text)}
    ends = {end for _, end in tokens(text)}
    clean: dict[str, list[list[int]]] = {}
    for level in LEVEL_KEYS:
        spans = raw.get(level)
        if not isinstance(spans, list) or not spans:
            raise ValueError(f"{level}: mark at least one span of the passage")
        if len(spans) > MAX_SPANS:
            raise ValueError(f"{level}: at most {MAX_SPANS} spans")
        seen: list[list[int]] = []
        for span in spans:
            if (
                not isinstance(span, list | tuple)
                or len(span) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in span)
            ):
                raise ValueError(f"{level}: a span is [start, end] (got {span!r:.40})")
            start, end = span
            if not 0 <= start < end <= len(text) or start not in starts or end not in ends:
                raise ValueError(f"{level}: [{start}, {end}] is not a run of whole words")
            seen.append([start, end])
        seen.sort()
        for before, after in zip(seen, seen[1:], strict=False):
            if after[0] < before[1]:
                raise ValueError(f"{level}: spans {before} and {after} overlap")
        clean[level] = seen
    return clean


def token_marks(spans: Sequence[Sequence[int]], text: str) -> list[int]:
    """1 for each token inside one of the spans, 0 otherwise."""
    return [int(any(s <= start and end <= e for s, e in spans)) for start, end in tokens(text)]


def f1(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Token-level F1 of two markings (None when neither marks anything)."""
    both = sum(x and y for x, y in zip(a, b, strict=True))
    total = sum(a) + sum(b)
    return None if total == 0 else 2 * both / total


def agreement(entries: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]) -> dict[str, Any]:
    """Span agreement over ``entries`` = [(context, [spans of each annotator])]: the mean
    pairwise token F1, and Fleiss' κ over every (entry, level, token) judged by every annotator
    of that entry (agreement.stats.fleiss_kappa)."""
    import pandas as pd

    from agreement.stats import fleiss_kappa

    f1s, rows = [], []
    for entry, (text, markings) in enumerate(entries):
        for level in LEVEL_KEYS:
            marks = [token_marks(m.get(level) or [], text) for m in markings]
            for a, b in combinations(marks, 2):
                value = f1(a, b)
                if value is not None:
                    f1s.append(value)
            for rater, marked in enumerate(marks):
                for position, mark in enumerate(marked):
                    rows.append(
                        {"item": f"{entry}:{level}:{position}", "rater": rater, "value": mark}
                    )
    kappa = fleiss_kappa(pd.DataFrame(rows), categories=[0, 1], ci="analytic") if rows else None
    return {
        "entries": len(entries),
        "pairs": len(f1s),
        "f1": sum(f1s) / len(f1s) if f1s else None,
        "kappa": kappa.value if kappa else None,
        "ci_low": kappa.ci_low if kappa else None,
        "ci_high": kappa.ci_high if kappa else None,
    }


def majority_spans(text: str, markings: Sequence[Mapping[str, Any]]) -> dict[str, list[list[int]]]:
    """Per level, the tokens marked by at least half of the annotators, merged into spans."""
    found: dict[str, list[list[int]]] = {}
    positions = tokens(text)
    for level in LEVEL_KEYS:
        marks = [token_marks(m.get(level) or [], text) for m in markings]
        chosen = [
            position
            for position in range(len(positions))
            if marks and 2 * sum(m[position] for m in marks) >= len(marks)
        ]
        spans: list[list[int]] = []
        for position in chosen:
            start, end = positions[position]
            if spans and spans[-1][2] == position - 1:
                spans[-1][1], spans[-1][2] = end, position
            else:
                spans.append([start, end, position])
        found[level] = [[start, end] for start, end, _ in spans]
    return found

"""The CausalT5k datasheet of a release (``causalt5k_datasheet.md``, written by
review.causalt5k.release_layout): the filtering cascade, the scorers' agreement, the blind
answers, the pressure variants, contributor statistics and the licence.

Contributor statistics are shares rounded to 5 % (:func:`round5`) and counts of people — never
a name, pseudonym or username: how much of the kept cases people or LLMs wrote
(review.causalt5k.floor), how concentrated authorship and reviewing are (the share of the most
active contributor, of the five and ten most active).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from annotation.models import Annotation, Item, Project

SOURCE = (
    'CausalT5k (the CausalT5kBench repository; paper: "CausalT5k: Diagnosing Refusal and '
    'Failure Modes in Trustworthy Causal Reasoning Across Causal Rungs", KDD 2026)'
)


def round5(share: float | None) -> int | None:
    """A share (0–1) as a percentage rounded to the nearest 5 (e.g. 0.123 → 10)."""
    if share is None:
        return None
    return int(5 * round(100 * share / 5))


def _concentration(counts: Counter) -> dict[str, Any]:
    total = sum(counts.values())
    ranked = [n for _, n in counts.most_common()]
    return {
        "people": len(counts),
        "top1": round5(sum(ranked[:1]) / total) if total else None,
        "top5": round5(sum(ranked[:5]) / total) if total else None,
        "top10": round5(sum(ranked[:10]) / total) if total else None,
    }


def contributor_statistics(project: Project) -> dict[str, Any]:
    """Shares rounded to 5 % and counts of people (module docstring)."""
    from review.causalt5k.floor import provenance_of
    from review.causalt5k.pipeline import case_items

    kept = case_items(project).filter(status=Item.Status.ACCEPTED)
    writers: Counter = Counter()
    authors: Counter = Counter()
    for payload, author_id in kept.values_list("payload", "author_id").iterator(chunk_size=2000):
        writers[provenance_of(payload, author_id)] += 1
        who = author_id or (payload or {}).get("author")
        if who:
            authors[str(who)] += 1
    total = sum(writers.values())
    reviewers = Counter(
        Annotation.objects.filter(
            item_stage__stage__project=project,
            item_stage__stage__kind__in=("ct5k_review", "ct5k_score", "ct5k_cluster"),
            annotator__isnull=False,
        ).values_list("annotator_id", flat=True)
    )
    return {
        "kept": total,
        "written_by": {
            key: round5(writers[key] / total) if total else None
            for key in ("human", "llm", "unknown")
        },
        "authors": _concentration(authors),
        "reviewers": _concentration(reviewers),
    }


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _stat_row(name: str, result: Any) -> str:
    if result is None:
        return f"| {name} | — | — | — |"
    value = getattr(result, "value", None)
    low, high = getattr(result, "ci_low", None), getattr(result, "ci_high", None)
    ci = f"[{_fmt(low)}, {_fmt(high)}]" if low is not None and high is not None else "—"
    return f"| {name} | {_fmt(value)} | {ci} | {getattr(result, 'n_items', '—')} |"


def render(project: Project) -> str:
    from review.causalt5k.blind import blind_accuracy
    from review.causalt5k.figures import cascade, score_agreement
    from review.causalt5k.pressure import confirmed_variants
    from review.causalt5k.services import latest_import

    figures = cascade(project)
    agreement = score_agreement(project)
    blind = blind_accuracy(project)
    people = contributor_statistics(project)
    record = latest_import(project)
    lines = [
        f"# {project.name}: the CausalT5k datasheet",
        "",
        f"Licence: **{project.license or 'CC-BY-4.0'}**.",
    ]
    if record is not None:
        lines += [
            "",
            f"Cases imported from {SOURCE}, released under CC-BY-4.0 (attribution); normalised "
            "to the canonical schema (`causalt5k_normalisation.csv` lists every mapping and "
            "every record not imported).",
        ]
    lines += [
        "",
        "## Files",
        "",
        "- `D{n}/D{n}_L{k}.json`: per domain (D1–D10) × Pearl level (L1–L3), the cases kept by "
        "the quality gate in the canonical schema, each with `revision`, `composite` and, for "
        "tier-2 cases whose variants passed the check, `pressure_variants` (neutral, social, "
        "epistemic). `unassigned.json`: kept cases without a domain or level.",
        "- `causalt5k_cases.jsonl`: the same cases, one per line; `causalt5k_pressure.jsonl`: "
        "the confirmed pressure variants paired with their case id.",
        "- `causalt5k_cascade.csv`: the filtering cascade beside the paper's.",
        "- The engine's `items.jsonl` / `items.csv`, `annotations.jsonl` / `annotations.csv`, "
        "`README.md`, `manifest.json`, `SHA256SUMS`.",
        "",
        "## The filtering cascade",
        "",
        "| Step | Cases | % of raw | Paper | Paper % |",
        "|---|---:|---:|---:|---:|",
    ]
    for step in figures["steps"]:
        lines.append(
            f"| {step['step']} | {step['count']:,} | {_fmt(step['percent'], 1)} | "
            f"{_fmt(step['paper'])} | {_fmt(step['paper_percent'], 1)} |"
        )
    review = figures["review"]
    lines += [
        "",
        f"Adversarial review of {review['decided']:,} cases: passed unchanged "
        f"{_fmt(review['percent']['pass'], 1)} %, minor revision "
        f"{_fmt(review['percent']['minor'], 1)} %, major restructure "
        f"{_fmt(review['percent']['major'], 1)} %, removed {_fmt(review['percent']['removed'], 1)}"
        f" % (paper: 80.1 / 19.7 / 0.2 %). Near-duplicates discarded: {figures['duplicates']:,}.",
        "",
        "## Agreement of the quality scorers",
        "",
    ]
    if agreement.get("n_items"):
        lines += [
            "| Statistic | Value | 95 % CI | Cases |",
            "|---|---:|---:|---:|",
            _stat_row("Fleiss' κ, keep/drop verdicts", agreement.get("kappa")),
            _stat_row("Krippendorff's α (interval), composite", agreement.get("alpha")),
            _stat_row("ICC(1,1), composite", agreement.get("icc")),
            "",
            f"{agreement['third_reviewer']} case(s) went to a third reviewer.",
        ]
    else:
        lines.append("No case has two scores yet.")
    from review.causalt5k.historic import historic_summary

    past = historic_summary(project)
    if past is not None:
        a = past["agreement"]
        lines += [
            "",
            "## The historic phase: the source release's own two reviewers",
            "",
            f"{past['cases']:,} cases with the release's scores ({past['two_scores']:,} with both "
            f"rounds); {past['kept']:,} reach a mean of {past['gate']:g}.",
        ]
        if a.get("n_items"):
            lines += [
                "",
                "| Round 1 against round 2 | Value | 95 % CI | Cases |",
                "|---|---:|---:|---:|",
                _stat_row("Fleiss' κ, keep/drop at the gate", a.get("kappa")),
                _stat_row("Krippendorff's α (interval), score", a.get("alpha")),
                _stat_row("ICC(1,1), score", a.get("icc")),
            ]
    lines += ["", "## Blind answers (human baseline)", ""]
    if blind:
        lines += ["| Level | Cases | Answers | Accuracy | 95 % CI |", "|---|---:|---:|---:|---:|"]
        for row in blind:
            ci = (
                f"[{_fmt(row['ci_low'])}, {_fmt(row['ci_high'])}]"
                if row["ci_low"] is not None
                else "—"
            )
            lines.append(
                f"| {row['level']} | {row['cases']} | {row['answers']} | "
                f"{_fmt(row['accuracy'])} | {ci} |"
            )
    else:
        lines.append("No blind answers.")
    lines += [
        "",
        "## Pressure variants",
        "",
        f"{len(confirmed_variants(project)):,} tier-2 case(s) with social- and epistemic-pressure "
        "variants confirmed to change only the pressure.",
        "",
        "## Contributors (shares rounded to 5 %, never identities)",
        "",
        f"- Kept cases: {people['kept']:,}; written by people "
        f"{_fmt(people['written_by']['human'])} %, by an LLM (or LLM-expanded) "
        f"{_fmt(people['written_by']['llm'])} %, unknown {_fmt(people['written_by']['unknown'])} %.",
        f"- Authors: {people['authors']['people']}; the most active wrote "
        f"{_fmt(people['authors']['top1'])} % of the kept cases, the five most active "
        f"{_fmt(people['authors']['top5'])} %, the ten most active "
        f"{_fmt(people['authors']['top10'])} %.",
        f"- Reviewers in Rungwise: {people['reviewers']['people']}; the most active gave "
        f"{_fmt(people['reviewers']['top1'])} % of the reviews, the five most active "
        f"{_fmt(people['reviewers']['top5'])} %.",
        "",
    ]
    return "\n".join(lines)


def write_datasheet(project: Project, path: Path) -> Path:
    path.write_text(render(project), encoding="utf-8")
    return path

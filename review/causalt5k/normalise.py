"""Normalise CausalT5k's records into canonical cases, with nothing lost silently.

Django-free (CONTRIBUTING.md, "Statistics are pure functions" applies alike). One concern per
module: review.causalt5k.release_files reads the release folder into raw records,
review.causalt5k.parsing reads values out of a record, this module declares the record schema
whose fields map the vocabulary's spellings (``RECORD_SCHEMA``, read by the import core), maps a
record to a canonical case (``normalise_record``) and merges the records that are the same case,
giving each a case id in the paper's form (``build_cases``), and review.causalt5k.report holds
the report. Every
record read ends in exactly one place of the ``Report``: it made a case, was merged into one,
was attached to one as a review, or was not imported — with the reason.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imports.core.report import Normalisation
from imports.core.schema import FieldSpec, RowSchema
from review.causalt5k import vocab
from review.causalt5k.parsing import (
    first,
    flatten,
    parse_value,
    score_of,
    snake,
    text_of,
    variables_of,
)
from review.causalt5k.release_files import SOURCE_KINDS, FileResult, RawRecord, read_release
from review.causalt5k.report import Report

# ---------------------------------------------------------------------------------------------
# The values a record spells in many ways: a registered schema that maps them


def _label_base(value: Any) -> str | None:
    """YES, NO or AMBIGUOUS: the label before its tier names it (``vocab.label_value``)."""
    return vocab.label_value(value, None)


def _boolean(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


#: A release record's fields whose spellings map onto one canonical value each, read from the
#: flattened record (review.causalt5k.parsing.flatten) by the import core: the first name
#: present wins, as in the release's own spellings. A spelling no rule knows is kept out of the
#: case and reported (``unmapped="report"``), never refused: the case is still imported. The
#: values that depend on other fields (the level's tier for the label, several trap spellings
#: read together, the provenance keys, the file's folder) are mapped by ``normalise_record``.
RECORD_SCHEMA = RowSchema(
    name="causalt5k.release_record",
    description="One record of a CausalT5k release, its vocabulary values normalised.",
    derived_id="row",
    extra_fields="ignore",
    fields=(
        FieldSpec(
            "pearl_level",
            "json",
            aliases=("level", "rung", "tier"),
            normalise=vocab.level_value,
            unmapped="report",
            help="'L2', 'L2 (Intervention)', 'Rung 2', '2', 'intervention' → L2.",
        ),
        FieldSpec(
            "domain_id",
            "json",
            aliases=("domain", "domain_name"),
            normalise=vocab.domain_code,
            unmapped="report",
            help="'Medicine', 'D4', 'D10 (Social Science)' → a D-code.",
        ),
        FieldSpec(
            "ground_truth",
            "json",
            aliases=("label", "correct_answer", "label_name"),
            normalise=_label_base,
            unmapped="report",
            help="YES/NO/AMBIGUOUS in its spellings (true, valid, flawed, conditional, …).",
        ),
        FieldSpec(
            "is_ambiguous",
            "json",
            aliases=("ambiguous",),
            normalise=_boolean,
            unmapped="report",
            help="A JSON boolean; any other value is reported and left out.",
        ),
        FieldSpec(
            "difficulty",
            "json",
            aliases=("difficulty_level",),
            normalise=vocab.difficulty_value,
            unmapped="report",
            help="Easy, Medium or Hard in any case.",
        ),
    ),
)
#: The key ``RECORD_SCHEMA`` is registered under (review.causalt5k.apps).
RECORD_KIND = RECORD_SCHEMA.name


def _schema_values(flat: dict) -> tuple[dict[str, Any], dict[str, Normalisation]]:
    """``RECORD_SCHEMA``'s clean values of a flattened record and its normalisation per field.

    Empty lists and objects count as absent, as ``parsing.first`` reads them."""
    present = {key: value for key, value in flat.items() if value != [] and value != {}}
    found: list[Normalisation] = []
    clean, _ = RECORD_SCHEMA.validate_row(present, None, partial=True, normalised=found)
    return clean or {}, {normalisation.field: normalisation for normalisation in found}


# ---------------------------------------------------------------------------------------------
# One record → one canonical case


@dataclass
class Issue:
    field: str
    value: str
    note: str = ""


@dataclass
class Normalised:
    case: dict
    mappings: list[tuple[str, str, str]]  # (field, spelling, canonical value)
    issues: list[Issue]


def _folder_hints(rel: str) -> dict[str, str]:
    match = re.match(r"final_dataset/(D\d+)/D\d+_(L[123])\.json$", rel)
    return {"domain": match.group(1), "level": match.group(2)} if match else {}


def normalise_record(raw: RawRecord) -> Normalised:
    """A canonical case dict from one submitted record (no case id yet: ``build_cases``)."""
    flat = flatten(raw.data) if isinstance(raw.data, dict) else {}
    mappings: list[tuple[str, str, str]] = []
    issues: list[Issue] = []
    hints = _folder_hints(raw.file)

    def mapped(fieldname: str, spelling: Any, value: Any) -> None:
        if spelling is not None:
            mappings.append((fieldname, str(spelling)[:200], "" if value is None else str(value)))

    original_id = text_of(first(flat, "id", "case_id", "source_case", "key"))
    provenance, provenance_spelling = vocab.provenance_value(flat)
    mapped("provenance", provenance_spelling, provenance)
    if provenance_spelling is not None and provenance is None:
        issues.append(Issue("provenance", provenance_spelling))
    clean, normalised = _schema_values(flat)
    level_spelling = normalised["pearl_level"].spelling if "pearl_level" in normalised else None
    level = clean.get("pearl_level")
    if level_spelling is not None:
        mapped("pearl_level", level_spelling, level)
        if level is None:
            issues.append(Issue("pearl_level", str(level_spelling)))
    if hints.get("level"):
        if level and level != hints["level"]:
            issues.append(Issue("pearl_level", str(level_spelling), f"file says {hints['level']}"))
        level = hints["level"]
    tier = vocab.TIER_OF_LEVEL.get(level) if level else None

    domain_spelling = normalised["domain_id"].spelling if "domain_id" in normalised else None
    domain = clean.get("domain_id")
    if domain is None and flat.get("domain_name") is not None:
        domain = vocab.domain_code(flat["domain_name"])
    if domain_spelling is not None:
        mapped("domain", domain_spelling, domain)
        if domain is None and not hints.get("domain"):
            issues.append(Issue("domain", str(domain_spelling)))
    if hints.get("domain"):
        if domain and domain != hints["domain"]:
            issues.append(
                Issue("domain", str(domain_spelling), f"folder says {hints['domain']}; folder kept")
            )
        elif domain is None and domain_spelling is not None:
            issues.append(
                Issue(
                    "domain", str(domain_spelling), f"unknown name; folder {hints['domain']} kept"
                )
            )
        domain = hints["domain"]

    trap_raw = flat.get("trap")
    spellings: list[Any] = []
    if isinstance(trap_raw, dict):
        t = {snake(k): parse_value(v) for k, v in trap_raw.items()}
        spellings = [t.get("type"), t.get("raw_type"), t.get("type_name"), t.get("canonical")]
        spellings += [t.get("raw_type_name")]
        subtype = first(t, "subtype_name", "subtype", "raw_subtype")
    else:
        spellings = [trap_raw if isinstance(trap_raw, str) else None]
        subtype = None
    spellings += [flat.get("trap_type"), flat.get("type")]
    subtype = subtype or first(flat, "trap_subtype", "subtype")
    present = [s for s in spellings if s is not None]
    trap, family = vocab.trap_code(*present)
    if family is None and tier == 3:
        _, family = vocab.trap_code(first(flat, "family"))
    spelling_text = " | ".join(str(s) for s in present) if present else None
    if present:
        if trap is None and family is None and vocab.is_no_trap(*present):
            mapped("trap", spelling_text, "(none)")
        else:
            mapped("trap", spelling_text, trap or (f"family {family}" if family else None))
            if trap is None and family is None:
                issues.append(Issue("trap", spelling_text or ""))
            elif trap is None:
                issues.append(
                    Issue(
                        "trap",
                        spelling_text or "",
                        f"not one of W1–W10/S1–S8; family {family} kept",
                    )
                )

    label_spelling = normalised["ground_truth"].spelling if "ground_truth" in normalised else None
    base_label = clean.get("ground_truth")
    label = vocab.label_value(base_label, tier) if base_label is not None else None
    if label_spelling is not None:
        mapped("label", f"{label_spelling} (L{tier or '?'})", label)
        if label is None:
            issues.append(Issue("label", str(label_spelling)))

    difficulty_spelling = normalised["difficulty"].spelling if "difficulty" in normalised else None
    difficulty = clean.get("difficulty")
    if difficulty_spelling is not None:
        mapped("difficulty", difficulty_spelling, difficulty)
        if difficulty is None:
            issues.append(Issue("difficulty", str(difficulty_spelling)))

    ambiguous = clean.get("is_ambiguous")
    if "is_ambiguous" in normalised and ambiguous is None:
        mapped("is_ambiguous", normalised["is_ambiguous"].spelling, None)
        issues.append(Issue("is_ambiguous", str(normalised["is_ambiguous"].spelling)))

    conditional = flat.get("conditional_answers")
    if not isinstance(conditional, dict):
        conditional = {}
        for key in (
            "answer_if_condition_1",
            "answer_if_condition_2",
            "answer_if_z_before_x",
            "answer_if_x_before_z",
        ):
            if flat.get(key) is not None:
                conditional[key] = flat[key]
        if not conditional and flat.get("conditional_answers") is not None:
            conditional = {"text": text_of(flat["conditional_answers"])}
    conditional = {k: text_of(v) for k, v in conditional.items() if v is not None} or None

    invariants = flat.get("invariants")
    if isinstance(invariants, str):
        invariants = [invariants]

    reviews = []
    r1 = score_of(flat.get("final_score"))
    r2 = score_of(flat.get("final_score_2"))
    for fieldname, value in (("final_score", r1), ("final_score_2", r2)):
        if isinstance(value, str):
            issues.append(Issue(fieldname, value, "not a 0–10 score"))
    rubric = {}
    for key in ("detailed_scores", "scoring_detail"):
        if isinstance(flat.get(key), dict):
            rubric[key] = flat[key]
    for key in ("recommendation", "overall_assessment", "initial_score"):
        if flat.get(key) is not None:
            rubric[key] = flat[key]
    reviewer1 = text_of(flat.get("validator"))
    if reviewer1 or isinstance(r1, float):
        reviews.append(
            {
                "round": 1,
                "reviewer": reviewer1,
                "score": r1 if isinstance(r1, float) else None,
                "rubric": rubric or None,
            }
        )
    reviewer2 = text_of(flat.get("validator_2"))
    if reviewer2 or isinstance(r2, float):
        reviews.append(
            {
                "round": 2,
                "reviewer": reviewer2,
                "score": r2 if isinstance(r2, float) else None,
                "rubric": None,
            }
        )

    claim = text_of(first(flat, "claim", "counterfactual_claim"))
    scenario = text_of(flat.get("scenario"))
    if scenario and not claim:  # groupG: the claim is inside the scenario text
        match = re.search(r'\n\s*Claim:\s*"?(.+?)"?\s*$', scenario, re.S)
        if match:
            claim = match.group(1).strip()
            scenario = scenario[: match.start()].strip()

    case = {
        "original_id": original_id,
        "original_case_id": text_of(first(flat, "original_case_id", "case_id")),
        "tier": tier,
        "pearl_level": level,
        "domain": domain,
        "domain_name": vocab.DOMAINS[domain][0] if domain else None,
        "subdomain": text_of(flat.get("subdomain")),
        "scenario": scenario,
        "claim": claim,
        "label": label,
        "is_ambiguous": ambiguous,
        "variables": variables_of(flat),
        "trap": trap,
        "trap_name": vocab.TRAPS.get(trap) if trap else None,
        "trap_family": family,
        "trap_subtype": text_of(subtype),
        "trap_original": spelling_text,
        "difficulty": difficulty,
        "causal_structure": text_of(
            first(flat, "causal_structure", "hidden_structure", "counterfactual_structure")
        ),
        "key_insight": text_of(flat.get("key_insight")),
        "rationale": text_of(
            first(flat, "gold_rationale", "explanation", "justification", "ground_truth_reasoning")
        ),
        "missing_info": text_of(
            first(flat, "missing_info", "missing_information", "hidden_structure")
        ),
        "pivotal_question": text_of(
            first(flat, "pivotal_question", "hidden_question", "hidden_timestamp")
        ),
        "refusal_template": text_of(
            first(flat, "refusal_template", "wise_refusal", "wise_response")
        ),
        "conditional_answers": conditional,
        "counterfactual_antecedent": text_of(
            first(flat, "counterfactual_antecedent", "antecedent")
        ),
        "invariants": [text_of(v) for v in invariants] if isinstance(invariants, list) else None,
        "reasoning_trace": text_of(first(flat, "reasoning_trace", "correct_reasoning")),
        "author": text_of(first(flat, "initial_author", "author", "annotation_author")),
        "provenance": provenance,
        "bucket": text_of(flat.get("bucket")),
        "reviews": reviews,
    }
    return Normalised(case, mappings, issues)


# ---------------------------------------------------------------------------------------------
# Records → cases


def fingerprint(scenario: str | None, claim: str | None) -> str:
    return vocab.squash(scenario or "") + " || " + vocab.squash(claim or "")


def _merge_into(case: dict, other: dict, conflicts: dict) -> None:
    for key, value in other.items():
        if key in ("reviews", "sources", "original_ids"):
            continue
        if value is None or value == [] or value == {}:
            continue
        current = case.get(key)
        if current is None or current == [] or current == {}:
            case[key] = value
        elif key == "variables":
            for part in ("X", "Y"):
                if case[key].get(part) is None:
                    case[key][part] = value.get(part)
            if not case[key].get("Z"):
                case[key]["Z"] = value.get("Z") or []
        elif current != value and key in MERGE_WATCHED:
            seen = conflicts.setdefault(key, [str(current)[:120]])
            if str(value)[:120] not in seen:
                seen.append(str(value)[:120])


#: Fields whose disagreement between merged records is reported (texts differ in punctuation
#: too often to list; they are kept from the highest-ranked source).
MERGE_WATCHED = (
    "label",
    "pearl_level",
    "domain",
    "trap",
    "trap_family",
    "difficulty",
    "original_id",
)


def _attach_rubric(raw: RawRecord, flat: dict) -> dict:
    return {
        "round": 1 if raw.kind == "review_round1" else 2,
        "reviewer": None,
        "score": score_of(flat.get("total_score"))
        if not isinstance(score_of(flat.get("total_score")), str)
        else None,
        "rubric": {
            k: flat.get(k)
            for k in ("scores", "status", "trap_validation", "feedback")
            if flat.get(k) is not None
        },
        "source": f"{raw.file}#{raw.index}",
    }


def build_cases(files: list[FileResult], records: Iterable[RawRecord]) -> tuple[list[dict], Report]:
    """Canonical cases (with case ids) and the report of how every record was used."""
    report = Report(files=list(files))
    by_print: dict[str, dict] = {}
    order: list[str] = []
    rubric_only: list[tuple[RawRecord, dict]] = []
    ranked = sorted(
        enumerate(records), key=lambda pair: (SOURCE_KINDS.index(pair[1].kind), pair[0])
    )
    report.records_read = len(ranked)
    for _, raw in ranked:
        where = {"file": raw.file, "record": raw.index}
        if not isinstance(raw.data, dict):
            report.outcomes["not imported"] += 1
            report.not_imported.append(
                {**where, "id": None, "reason": f"not an object: {type(raw.data).__name__}"}
            )
            continue
        flat = flatten(raw.data)
        if flat.get("scenario") is None and (
            flat.get("scores") or flat.get("total_score") is not None
        ):
            rubric_only.append((raw, flat))
            continue
        result = normalise_record(raw)
        case = result.case
        for mapping in result.mappings:
            report.mappings[mapping] += 1
        for issue in result.issues:
            report.unmapped.append(
                {
                    "field": issue.field,
                    "value": issue.value[:200],
                    "note": issue.note,
                    **where,
                    "id": case["original_id"],
                }
            )
        if not case["scenario"]:
            report.outcomes["not imported"] += 1
            report.not_imported.append(
                {**where, "id": case["original_id"], "reason": "no scenario"}
            )
            continue
        source = f"{raw.file}#{raw.index}"
        key = fingerprint(case["scenario"], case["claim"])
        existing = by_print.get(key)
        if existing is None:
            case["sources"] = [source]
            case["original_ids"] = [case["original_id"]] if case["original_id"] else []
            case["_conflicts"] = {}
            by_print[key] = case
            order.append(key)
            report.outcomes["created a case"] += 1
            continue
        report.outcomes["merged into a case"] += 1
        existing["sources"].append(source)
        if case["original_id"] and case["original_id"] not in existing["original_ids"]:
            existing["original_ids"].append(case["original_id"])
        _merge_into(existing, case, existing["_conflicts"])
        for review in case["reviews"]:
            same = [
                r
                for r in existing["reviews"]
                if r["round"] == review["round"]
                and r["reviewer"] == review["reviewer"]
                and r["score"] == review["score"]
            ]
            if same:
                if review.get("rubric") and not same[0].get("rubric"):
                    same[0]["rubric"] = review["rubric"]
            else:
                existing["reviews"].append(review)

    cases = [by_print[k] for k in order]
    _assign_ids(cases)
    ids = Counter(i for c in cases for i in c["original_ids"])
    report.id_collisions = sum(1 for n in ids.values() if n > 1)

    # Rubric-only records (an object keyed by case): attached where exactly one tier-3 case
    # carries that key or case id.
    by_key: dict[str, list[dict]] = defaultdict(list)
    for case in cases:
        for key in {*case["original_ids"], case.get("original_case_id")}:
            if key:
                by_key[key].append(case)
    for raw, flat in rubric_only:
        where = {"file": raw.file, "record": raw.index}
        keys = [flat.get("key"), text_of(flat.get("case_id"))]
        matches: list[dict] = []
        for candidate in keys:
            found = [c for c in by_key.get(candidate or "", []) if c["tier"] == 3]
            if found:
                matches = found
                break
        if len(matches) == 1:
            matches[0]["reviews"].append(_attach_rubric(raw, flat))
            report.outcomes["attached as a review"] += 1
            report.attached.append({**where, "case_id": matches[0]["case_id"]})
        else:
            reason = (
                f"rubric only, its case id {keys[1]!r} fits {len(matches)} tier-3 cases"
                if matches
                else f"rubric only, no tier-3 case has id {keys[0]!r} or case id {keys[1]!r}"
            )
            report.outcomes["not imported"] += 1
            report.not_imported.append({**where, "id": keys[0], "reason": reason})

    for case in cases:
        conflicts = case.pop("_conflicts")
        if len(case["sources"]) > 1:
            report.merges.append(
                {
                    "case_id": case["case_id"],
                    "original_ids": case["original_ids"],
                    "sources": case["sources"],
                    "conflicts": conflicts,
                }
            )
    return cases, report


def _assign_ids(cases: list[dict]) -> None:
    """``T{tier}-{trap|family|X}-{DOM}-{seq:03d}``: the sequence counts up within each prefix in
    the order the cases were first met (final shards first), so a release gives the same ids
    every time."""
    counters: Counter = Counter()
    for case in cases:
        tier = case["tier"] or "X"
        trap = case["trap"] or case["trap_family"] or "X"
        domain = vocab.DOMAINS[case["domain"]][1] if case["domain"] else "UNK"
        prefix = f"T{tier}-{trap}-{domain}"
        counters[prefix] += 1
        case["case_id"] = f"{prefix}-{counters[prefix]:03d}"


def normalise_release(root: Path) -> tuple[list[dict], Report]:
    files, records = read_release(root)
    return build_cases(files, records)

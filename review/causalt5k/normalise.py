"""Read CausalT5k's release and normalise it into canonical cases, with nothing lost silently.

Django-free (CONTRIBUTING.md, "Statistics are pure functions" applies alike): ``read_release``
walks the release folder, ``normalise_record`` turns one submitted record into a canonical case,
``build_cases`` merges the records that are the same case and gives each a case id in the
paper's form. Every record read ends in exactly one place of the ``Report``: it made a case, was
merged into one, was attached to one as a review, or was not imported — with the reason.

Values stored as Python reprs ("{'X': …}", "True") are parsed with ``ast.literal_eval``, never
``eval``.
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imports.core.readers import ImportFileError, RecordReader
from review.causalt5k import vocab

#: Source kinds, in the order their values win a merge.
SOURCE_KINDS = ("final", "clean", "unlabelled", "review_round2", "review_round1", "raw")
NULLS = {"", "none", "null", "n/a", "na", "nan", "-"}


# ---------------------------------------------------------------------------------------------
# Reading files


@dataclass
class FileResult:
    path: str
    kind: str
    status: str  # "ok" | "invalid"
    records: int = 0
    error: str = ""
    detail: str = ""


@dataclass
class RawRecord:
    file: str
    index: str  # position in the file: "12", "cases[3]", "[4].responses.response1[0]", a key
    kind: str
    data: dict


def _source_kind(rel: str) -> str | None:
    if rel.startswith("final_dataset/clean/"):
        return "clean"
    if rel.startswith("final_dataset/unlabelled/"):
        return "unlabelled"
    if re.match(r"final_dataset/D\d+/D\d+_L[123]\.json$", rel):
        return "final"
    for kind in ("review_round1", "review_round2", "raw_submissions"):
        if rel.startswith(kind + "/"):
            return "raw" if kind == "raw_submissions" else kind
    return None


def describe_json_error(text: str, error: json.JSONDecodeError) -> str:
    """Why a file is not one JSON document, in words a person can act on."""
    where = f"line {error.lineno}, column {error.colno}"
    if error.msg.startswith("Invalid \\escape"):
        snippet = text[max(0, error.pos - 20) : error.pos + 6].replace("\n", " ")
        return f'invalid backslash escape at {where} (…{snippet}…): JSON allows only \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX'
    if error.msg.startswith("Extra data"):
        values, pos, decoder = 0, 0, json.JSONDecoder()
        valid = True
        while pos < len(text):
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos >= len(text):
                break
            try:
                _, pos = decoder.raw_decode(text, pos)
                values += 1
            except json.JSONDecodeError:
                valid = False
                break
        tail = "" if valid else "; the text after them is not JSON either"
        return (
            f"a second JSON value starts at {where}: {values} JSON values one after another "
            f"(JSON Lines or concatenated documents), not one document{tail}"
        )
    return f"{error.msg} at {where}"


def _expand(data: Any, kind: str, file: str) -> tuple[list[RawRecord], str]:
    """The records of one parsed JSON document and a note on its shape."""
    note = ""
    if isinstance(data, dict):
        lists = [k for k in ("cases", "questions") if isinstance(data.get(k), list)]
        if lists:
            key = lists[0]
            skipped = [k for k in data if k != key]
            note = f"records under '{key}'" + (
                f"; block {skipped} is file metadata" if skipped else ""
            )
            items = [(f"{key}[{i}]", r) for i, r in enumerate(data[key])]
        elif data and all(isinstance(v, dict) for v in data.values()):
            note = "an object keyed by case"
            items = [(k, {**v, "_key": k}) for k, v in data.items()]
        else:
            note = "one object"
            items = [("0", data)]
    elif isinstance(data, list):
        items = [(str(i), r) for i, r in enumerate(data)]
    else:
        items = [("0", data)]
    out, wrapped = _records(items, kind, file)
    return out, note or wrapped


def _records(items: Iterable[tuple[str, Any]], kind: str, file: str) -> tuple[list[RawRecord], str]:
    """(position, value) pairs as records, each ``{case_id, responses}`` wrapper opened into
    its responses; the note says when there was one."""
    out: list[RawRecord] = []
    note = ""
    for index, record in items:
        if isinstance(record, dict) and isinstance(record.get("responses"), dict):
            note = "records wrapped in {case_id, responses}"
            for name, inner in record["responses"].items():
                for j, sub in enumerate(inner if isinstance(inner, list) else [inner]):
                    out.append(RawRecord(file, f"{index}.responses.{name}[{j}]", kind, sub))
            continue
        out.append(RawRecord(file, index, kind, record))
    return out, note


def _read_json_lines(path: Path, kind: str, rel: str) -> tuple[list[RawRecord], str]:
    """The records of a JSON Lines file, one per non-blank line, read by the import core's
    reader (``imports.core.readers.RecordReader``: UTF-8 with or without a byte-order mark,
    the values' limits of ``annotation.values``). A record's position is its line
    (``"line 12"``). Raises ``ValueError`` with the reader's message (its line and column) for
    the first line that is not a JSON value, or for a file that cannot be read at all: like a
    JSON file that is not valid, such a file gives nothing."""
    items: list[tuple[str, Any]] = []
    with path.open("rb") as handle:
        reader = RecordReader(handle, fmt="jsonl", filename=path.name)
        try:
            for raw in reader:
                if raw.error is not None:
                    raise ValueError(raw.error.message.rstrip("."))
                items.append((f"line {raw.line}", raw.data))
        except ImportFileError as error:
            raise ValueError(error.error.message.rstrip(".")) from None
    found, note = _records(items, kind, rel)
    return found, note or f"JSON Lines, {len(items)} lines"


def read_release(root: Path) -> tuple[list[FileResult], list[RawRecord]]:
    """Every JSON / JSON Lines file of the release, in path order. A ``.json`` file is one JSON
    document; a ``.jsonl`` file is JSON Lines, one value per line, read by the import core's
    reader (``_read_json_lines``). A file that is not valid in its form is reported with where
    and why, and nothing is taken from it."""
    root = Path(root)
    files: list[FileResult] = []
    records: list[RawRecord] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if path.suffix not in (".json", ".jsonl"):
            continue
        kind = _source_kind(rel)
        if kind is None:
            files.append(FileResult(rel, "unknown", "invalid", error="not a folder of the release"))
            continue
        if path.suffix == ".jsonl":
            try:
                found, note = _read_json_lines(path, kind, rel)
            except ValueError as error:
                files.append(FileResult(rel, kind, "invalid", error=str(error)))
                continue
            files.append(FileResult(rel, kind, "ok", records=len(found), detail=note))
            records.extend(found)
            continue
        text = path.read_text(encoding="utf-8")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            files.append(FileResult(rel, kind, "invalid", error=describe_json_error(text, error)))
            continue
        found, note = _expand(data, kind, rel)
        files.append(FileResult(rel, kind, "ok", records=len(found), detail=note))
        records.extend(found)
    return files, records


# ---------------------------------------------------------------------------------------------
# Parsing values


def snake(key: str) -> str:
    """'pearlLevel' → 'pearl_level', 'Case ID' → 'case_id', 'variables, X' → 'variables_x'."""
    key = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(key))
    return re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")


def parse_value(value: Any) -> Any:
    """Strings holding JSON or a Python literal become the value; 'None'/'N/A'/'' become None."""
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in NULLS:
            return None
        if text in ("True", "true"):
            return True
        if text in ("False", "false"):
            return False
        if text[:1] in "{[" and text[-1:] in "}]":
            try:
                return json.loads(text)
            except ValueError:
                pass
            try:
                return ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return value
        return value
    return value


def flatten(record: dict) -> dict[str, Any]:
    """Keys in snake case, reprs parsed; an ``annotations``/``annotation`` object's keys are
    fallbacks (the record's own keys win)."""
    flat: dict[str, Any] = {}
    nested: dict[str, Any] = {}
    for key, value in record.items():
        name = snake(key)
        value = parse_value(value)
        if name in ("annotations", "annotation") and isinstance(value, dict):
            for k, v in value.items():
                nested.setdefault(snake(k), parse_value(v))
            flat.setdefault("annotation_meta", value)
            continue
        flat[name] = value
    for key, value in nested.items():
        if flat.get(key) is None:
            flat[key] = value
    return flat


def first(flat: dict, *names: str) -> Any:
    for name in names:
        value = flat.get(name)
        if value is not None and value != "" and value != [] and value != {}:
            return value
    return None


def text_of(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        return "\n".join(str(v) for v in value if v is not None) or None
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    text = str(value).strip()
    return text or None


def variable(value: Any) -> dict | None:
    """'Exercise' or {'name', 'role'} or 'X = Exercise' → {'name', 'role'}."""
    if value is None:
        return None
    if isinstance(value, dict):
        name = text_of(value.get("name") or value.get("variable") or value.get("description"))
        if name is None:
            return None
        return {"name": name, "role": text_of(value.get("role"))}
    text = str(value).strip()
    text = re.sub(r"^[XYZ]\d?\s*[=:]\s*", "", text)
    return {"name": text, "role": None} if text else None


def variables_of(flat: dict) -> dict:
    raw = flat.get("variables")
    xs: dict[str, Any] = {"X": None, "Y": None, "Z": []}
    if isinstance(raw, list):  # ["X = …", "Y = …", "Z = …"]
        as_dict: dict[str, Any] = {}
        for entry in raw:
            match = re.match(r"^\s*([XYZ])\d?\s*[=:]", str(entry))
            if match:
                as_dict.setdefault(match.group(1), []).append(entry)
        raw = {k: (v[0] if k != "Z" else v) for k, v in as_dict.items()}
    if isinstance(raw, dict):
        lower = {str(k).upper(): v for k, v in raw.items()}
        xs["X"] = variable(lower.get("X"))
        xs["Y"] = variable(lower.get("Y"))
        zs = lower.get("Z")
        zs = zs if isinstance(zs, list) else [zs] if zs is not None else []
        for k in sorted(lower):
            if re.match(r"^Z\d$", k):
                zs.append(lower[k])
        xs["Z"] = [v for v in (variable(z) for z in zs) if v]
    xs["X"] = xs["X"] or variable(first(flat, "var_x", "variables_x", "x"))
    xs["Y"] = xs["Y"] or variable(first(flat, "var_y", "variables_y", "y"))
    if not xs["Z"]:
        zs = [first(flat, f"var_z{i}") for i in (1, 2, 3)] + [first(flat, "variables_z", "z")]
        xs["Z"] = [v for v in (variable(z) for z in zs) if v]
    return xs


def score_of(value: Any) -> float | None | str:
    """A 0–10 score, None when absent, or the text itself when it is not a score (reported)."""
    if value is None:
        return None
    try:
        score = float(str(value).strip().split("/")[0])
    except ValueError:
        return str(value)
    if not 0 <= score <= 10:
        return str(value)
    return score


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
    level_spelling = first(flat, "pearl_level", "level", "rung", "tier")
    level = vocab.level_value(level_spelling) if level_spelling is not None else None
    if level_spelling is not None:
        mapped("pearl_level", level_spelling, level)
        if level is None:
            issues.append(Issue("pearl_level", str(level_spelling)))
    if hints.get("level"):
        if level and level != hints["level"]:
            issues.append(Issue("pearl_level", str(level_spelling), f"file says {hints['level']}"))
        level = hints["level"]
    tier = vocab.TIER_OF_LEVEL.get(level) if level else None

    domain_spelling = first(flat, "domain_id", "domain", "domain_name")
    domain = vocab.domain_code(domain_spelling) if domain_spelling is not None else None
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
                issues.append(Issue("trap", spelling_text))
            elif trap is None:
                issues.append(
                    Issue("trap", spelling_text, f"not one of W1–W10/S1–S8; family {family} kept")
                )

    label_spelling = first(flat, "ground_truth", "label", "correct_answer", "label_name")
    if tier == 3 and flat.get("ground_truth") is None and flat.get("label") is not None:
        label_spelling = flat.get("label")
    label = vocab.label_value(label_spelling, tier) if label_spelling is not None else None
    if isinstance(label_spelling, bool):
        label = vocab.label_value(str(label_spelling), tier)
    if label_spelling is not None:
        mapped("label", f"{label_spelling} (L{tier or '?'})", label)
        if label is None:
            issues.append(Issue("label", str(label_spelling)))

    difficulty_spelling = first(flat, "difficulty", "difficulty_level")
    difficulty = vocab.difficulty_value(difficulty_spelling) if difficulty_spelling else None
    if difficulty_spelling is not None:
        mapped("difficulty", difficulty_spelling, difficulty)
        if difficulty is None:
            issues.append(Issue("difficulty", str(difficulty_spelling)))

    ambiguous = first(flat, "is_ambiguous", "ambiguous")
    if ambiguous is not None and not isinstance(ambiguous, bool):
        mapped("is_ambiguous", ambiguous, None)
        issues.append(Issue("is_ambiguous", str(ambiguous)))
        ambiguous = None

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
        for key in keys:
            found = [c for c in by_key.get(key or "", []) if c["tier"] == 3]
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

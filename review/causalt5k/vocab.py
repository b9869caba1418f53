"""CausalT5k's canonical vocabularies and the spellings found in the release that map to them.

The paper's taxonomy (tiers, ten domains, W1–W10 Wolf traps, S1–S8 Sheep designs, L3
families F1–F8) and the rules that turn a submitted spelling into one of its values. A spelling
no rule recognises maps to ``None`` and is reported by the normaliser, never guessed.
"""

from __future__ import annotations

import re

TIER_OF_LEVEL = {"L1": 1, "L2": 2, "L3": 3}
LEVEL_NAMES = {"L1": "Association", "L2": "Intervention", "L3": "Counterfactual"}

#: D-code → (name, three-letter code used in case ids; MED is the paper's, the rest ours).
DOMAINS: dict[str, tuple[str, str]] = {
    "D1": ("Daily Life", "DLY"),
    "D2": ("History", "HIS"),
    "D3": ("Markets & Finance", "MKT"),
    "D4": ("Medicine & Health", "MED"),
    "D5": ("Economics", "ECO"),
    "D6": ("Environment & Climate", "ENV"),
    "D7": ("Law & Ethics", "LAW"),
    "D8": ("AI & Technology", "AIT"),
    "D9": ("Sports & Performance", "SPT"),
    "D10": ("Social Science", "SOC"),
}

#: Free-text domain names (lower case, punctuation collapsed) → D-code. Names that could be
#: two domains ("Business": markets or economics? "Public Policy") are deliberately absent.
DOMAIN_NAMES = {
    "daily life": "D1",
    "everyday life": "D1",
    "history": "D2",
    "markets": "D3",
    "markets finance": "D3",
    "finance": "D3",
    "medicine": "D4",
    "medicine health": "D4",
    "healthcare": "D4",
    "health": "D4",
    "public health": "D4",
    "epidemiology": "D4",
    "economics": "D5",
    "environment": "D6",
    "environment climate": "D6",
    "climate": "D6",
    "climate science": "D6",
    "environmental science": "D6",
    "law": "D7",
    "law ethics": "D7",
    "ethics": "D7",
    "criminal justice": "D7",
    "ai tech": "D8",
    "ai technology": "D8",
    "technology": "D8",
    "computer science": "D8",
    "ai safety alignment": "D8",
    "sports": "D9",
    "sports performance": "D9",
    "social science": "D10",
    "psychology": "D10",
    "education": "D10",
}

TRAPS = {
    "W1": "Selection bias",
    "W2": "Survivorship bias",
    "W3": "Healthy user bias",
    "W4": "Regression to the mean",
    "W5": "Ecological fallacy",
    "W6": "Base-rate neglect",
    "W7": "Confounding",
    "W8": "Simpson's paradox",
    "W9": "Reverse causation",
    "W10": "Post hoc fallacy",
    "S1": "Randomised controlled trial",
    "S2": "Natural experiment",
    "S3": "Lottery / quasi-random assignment",
    "S4": "Controlled ablation",
    "S5": "Mechanism + dose",
    "S6": "Instrumental variable",
    "S7": "Difference-in-differences",
    "S8": "Regression discontinuity",
}

FAMILIES = {
    "F1": "Deterministic",
    "F2": "Probabilistic",
    "F3": "Overdetermination",
    "F4": "Structural",
    "F5": "Temporal",
    "F6": "Epistemic",
    "F7": "Attribution",
    "F8": "Moral and legal causation",
}

#: Name patterns, tried in order (the specific before the general: "regression discontinuity"
#: before "regression", "mechanism + dose" before nothing — a bare "mechanism" is the older
#: taxonomy's mechanism-failure trap, not the S5 design).
TRAP_PATTERNS: tuple[tuple[str, str], ...] = (
    ("S8", r"regression.?discontinuity|\brdd?\b"),
    ("S7", r"diff(erence)?.?in.?diff|\bdid\b"),
    ("S6", r"instrumental"),
    ("S5", r"dose"),
    ("S4", r"ablation"),
    ("S3", r"lottery|quasi.?random"),
    ("S2", r"natural.?experiment"),
    ("S1", r"\brct\b|randomi[sz]ed"),
    ("W3", r"healthy.?user"),
    ("W2", r"survivor"),
    ("W4", r"regression"),
    ("W5", r"ecological"),
    ("W6", r"base.?rate"),
    ("W8", r"simpson"),
    ("W9", r"reverse"),
    ("W10", r"post.?hoc"),
    ("W7", r"^conf(ounding|ounder)?s?$|^confound|omitted.?variable"),
    ("W1", r"^selection|selection.?bias|sampling.?on"),
)

#: The older 17-trap taxonomy (T1–T17) used by most shards: the types that are one of the
#: paper's ten Wolf traps. T3 collider, T4 immortal time, T9 confounder–mediator, T11 feedback,
#: T12 temporal, T13 measurement, T14 recall, T15 mechanism, T16 Goodhart and T17 backfire
#: have no W equivalent: they stay as the case's ``trap_family`` and are reported.
LEGACY_TRAPS = {"T1": "W1", "T2": "W2", "T5": "W4", "T6": "W5", "T7": "W7", "T8": "W8", "T10": "W9"}
LEGACY_NAMES = {
    "T1": "Selection",
    "T2": "Survivorship",
    "T3": "Collider",
    "T4": "Immortal time",
    "T5": "Regression",
    "T6": "Ecological",
    "T7": "Confounder",
    "T8": "Simpson's",
    "T9": "Confounder–mediator",
    "T10": "Reverse",
    "T11": "Feedback",
    "T12": "Temporal",
    "T13": "Measurement",
    "T14": "Recall",
    "T15": "Mechanism",
    "T16": "Goodhart",
    "T17": "Backfire",
}
#: Names of the older taxonomy's traps without a W equivalent → their T-code.
LEGACY_PATTERNS: tuple[tuple[str, str], ...] = (
    ("T9", r"conf.?med|mediat"),
    ("T3", r"collider"),
    ("T4", r"immortal"),
    ("T11", r"feedback"),
    ("T12", r"temporal"),
    ("T13", r"measurement"),
    ("T14", r"recall"),
    ("T15", r"mechanism"),
    ("T16", r"goodhart"),
    ("T17", r"backfire"),
)
NO_TRAP = {"none", "no trap", "n a", "na", "no_trap", ""}

LABELS_T12 = ("YES", "NO", "AMBIGUOUS")
LABELS_T3 = ("VALID", "INVALID", "CONDITIONAL")
_LABEL_SPELLINGS = {
    "yes": "YES",
    "true": "YES",
    "valid": "YES",
    "no": "NO",
    "false": "NO",
    "invalid": "NO",
    "flawed": "NO",
    "ambiguous": "AMBIGUOUS",
    "conditional": "AMBIGUOUS",
    "uncertain": "AMBIGUOUS",
}
_T3_OF = {"YES": "VALID", "NO": "INVALID", "AMBIGUOUS": "CONDITIONAL"}

DIFFICULTIES = ("Easy", "Medium", "Hard")


def squash(text: object) -> str:
    """Lower case, every run of non-alphanumerics one space: 'D10 (Social Science)' → 'd10 social science'."""
    return re.sub(r"[^a-z0-9]+", " ", str(text).lower()).strip()


def domain_code(value: object) -> str | None:
    """'Medicine', 'D4', 'D10 (Social Science)', 'D8 - AI Safety & Alignment' → a D-code, else None."""
    text = squash(value)
    match = re.match(r"^d(10|[1-9])\b", text) or re.search(r"\bd(10|[1-9])$", text)
    if match:
        return f"D{match.group(1)}"
    return DOMAIN_NAMES.get(text)


def trap_code(*spellings: object) -> tuple[str | None, str | None]:
    """(trap, family) from a case's trap spellings (type code, type name, …).

    Trap: W1–W10 or S1–S8, or None. Family: F1–F8 (L3) or an older-taxonomy T-code when the
    trap is none of the paper's, or None. An explicit W/S code wins, then a recognised name,
    then the older T-code's equivalent.
    """
    texts = [str(s).strip() for s in spellings if s not in (None, "")]
    family = None
    for text in texts:
        match = re.match(r"^([WSFT])(\d{1,2})\b", text.upper())
        if match:
            code = f"{match.group(1)}{int(match.group(2))}"
            if code in TRAPS:
                return code, None
            if code in FAMILIES or code in LEGACY_NAMES:
                family = family or code
    for text in texts:
        name = squash(re.sub(r"^[A-Za-z]\d{1,2}[\s_:.-]*", "", text))
        for code, pattern in TRAP_PATTERNS:
            if re.search(pattern, name):
                return code, None
    if family in LEGACY_TRAPS:
        return LEGACY_TRAPS[family], None
    if family is None:
        for text in texts:
            name = squash(text)
            for code, pattern in LEGACY_PATTERNS:
                if re.search(pattern, name):
                    return None, code
    return None, family


def is_no_trap(*spellings: object) -> bool:
    return all(squash(s) in NO_TRAP for s in spellings if s is not None)


def label_value(value: object, tier: int | None) -> str | None:
    """YES/NO/AMBIGUOUS for tiers 1–2, VALID/INVALID/CONDITIONAL for tier 3, else None."""
    text = squash(value)
    text = re.sub(r"^(label|answer)\s+", "", text)
    first = text.split(" ")[0] if text else ""
    base = _LABEL_SPELLINGS.get(text) or _LABEL_SPELLINGS.get(first)
    if base is None:
        return None
    if tier == 3:
        return _T3_OF[base]
    return base


def difficulty_value(value: object) -> str | None:
    text = squash(value)
    for name in DIFFICULTIES:
        if text == name.lower():
            return name
    return None


def level_value(value: object) -> str | None:
    """'L2', 'L2 (Intervention)', 'Rung 2', '2', 'intervention' → 'L2'."""
    text = squash(value)
    match = re.match(r"^(?:l|rung |level |tier |t)?\s?([123])\b", text)
    if match:
        return f"L{match.group(1)}"
    for level, name in LEVEL_NAMES.items():
        if text == name.lower():
            return level
    return None


#: Who wrote a case (the human floor, review.causalt5k.floor), from the release's provenance
#: fields — the first that says: ``generator`` (human / llm_generated /
#: llm_draft_human_verified), ``origin`` (human_annotator / generated), a ``provenance`` object
#: naming a ``generator_model``, an ``llm`` field naming the model used (raw submissions:
#: "ChatGPT (web)"). A draft an LLM wrote and a person verified is LLM-expanded, not
#: human-written. No such field: unknown (None) — the author field alone (a contributor code)
#: does not say whether a person or a model wrote the text.
HUMAN, LLM = "human", "llm"
_PROVENANCE_VALUES = {
    ("generator", "human"): HUMAN,
    ("generator", "human_revised"): HUMAN,  # 4 raw records: written, then revised, by a person
    ("generator", "llm_generated"): LLM,
    ("generator", "llm_draft_human_verified"): LLM,
    ("origin", "human_annotator"): HUMAN,
    ("origin", "generated"): LLM,
}


def provenance_value(flat: dict) -> tuple[str | None, str | None]:
    """(human | llm | None, the spelling that decided, e.g. "generator=llm_generated"); the
    fields may sit at the top of the record or in its ``source`` object."""
    found_source = flat.get("source")
    source: dict = found_source if isinstance(found_source, dict) else {}
    for key in ("generator", "origin"):
        value = flat.get(key) or source.get(key)
        if isinstance(value, str) and value.strip():
            found = _PROVENANCE_VALUES.get((key, value.strip().lower()))
            return found, f"{key}={value.strip()}"
    provenance = flat.get("provenance")
    if isinstance(provenance, dict) and provenance.get("generator_model"):
        return LLM, "provenance.generator_model"
    model = flat.get("llm")
    if isinstance(model, str) and model.strip():
        return LLM, f"llm={model.strip()[:40]}"
    return None, None

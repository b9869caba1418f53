"""METER entries, Django-free: the canonical form of a generated entry, its checks, diffs and the
release's option order.

A **pair** (the item verified first) is ``{"pair_id", "source", "context", "cause", "effect",
"triggers"}``. A **generated entry** is the pair's context plus three five-option multiple-choice
questions, one per level (1 causal discovery, 2 intervention, 3 counterfactual). Canonically, a
question is::

    {"level": 1, "question": "…", "correct": "…",
     "distractors": [{"text": "…", "category": "contradictory"}, … four …]}

Generation files (what the team's LLM writes back) may give each question as five ``options``
(``{"text", "correct": true}`` or ``{"text", "category"}``) or in the canonical form; category
names are matched case- and punctuation-insensitively ("Causal reversal", "causal_reversal").
Every problem is an :class:`EntryProblem` naming the field path (``questions[1].options[3]``),
so the import can say line and field.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from annotation.values import text_problem

LEVELS = {1: "causal discovery", 2: "intervention", 3: "counterfactual"}
#: Distractor categories (METER's four), key → label.
CATEGORIES = {
    "contradictory": "Contradictory statement",
    "unfounded": "Unfounded statement",
    "reversal": "Causal reversal",
    "irrelevant": "Irrelevant fact",
}
SOURCES = ("ESL", "MAVEN-ERE", "MECI", "WIKIWHY")
VERIFY_REASONS = {
    "ambiguous": "Ambiguous",
    "erroneous": "Erroneous",
    "incomplete": "Semantically incomplete",
}
#: The filter stage's five criteria, checked per question: key → what the annotator confirms.
CRITERIA = {
    "level": "The question matches its level",
    "faithful": "Faithful to the context",
    "fluent": "Fluent",
    "correct": "The correct option is accurate and complete",
    "distractors": "Every distractor matches its category",
}
#: The checker's flags: field → problems it may have.
CHECK_PROBLEMS = {
    "question": {"unclear": "Unclear", "wrong_level": "At the wrong level"},
    "correct": {"inaccurate": "Inaccurate", "incomplete": "Incomplete"},
    "distractor": {"ambiguous": "Ambiguous", "category": "Does not match its category"},
}
N_DISTRACTORS = 4
MAX_TEXT = 2000

_ALIASES = {
    "contradictory": "contradictory",
    "contradictorystatement": "contradictory",
    "contradiction": "contradictory",
    "unfounded": "unfounded",
    "unfoundedstatement": "unfounded",
    "reversal": "reversal",
    "causalreversal": "reversal",
    "reversedcausality": "reversal",
    "irrelevant": "irrelevant",
    "irrelevantfact": "irrelevant",
    "irrelevantstatement": "irrelevant",
}


@dataclass(frozen=True)
class EntryProblem:
    field: str
    message: str


class EntryInvalid(ValueError):
    """The entry breaks the METER format; ``problems`` lists every problem found."""

    def __init__(self, problems: Sequence[EntryProblem]) -> None:
        super().__init__("; ".join(f"{p.field}: {p.message}" for p in problems))
        self.problems = list(problems)


def category_key(value: Any) -> str | None:
    """The canonical category for a spelling, or None when it is not one of METER's four."""
    if not isinstance(value, str):
        return None
    return _ALIASES.get(re.sub(r"[^a-z]", "", value.casefold()))


def _text(value: Any, where: str, problems: list[EntryProblem]) -> str:
    if not isinstance(value, str) or not value.strip():
        problems.append(EntryProblem(where, "expected a non-empty text"))
        return ""
    if len(value) > MAX_TEXT:
        problems.append(EntryProblem(where, f"at most {MAX_TEXT} characters ({len(value)} given)"))
    unstorable = text_problem(value)  # the database's one rule: no NUL, no unpaired surrogate
    if unstorable:
        problems.append(EntryProblem(where, f"holds {unstorable}"))
    return value.strip()


def _question_from_options(raw: Mapping[str, Any], where: str, problems: list[EntryProblem]):
    options = raw.get("options")
    if not isinstance(options, list):
        problems.append(EntryProblem(f"{where}.options", "expected a list of five options"))
        return None, []
    if len(options) != N_DISTRACTORS + 1:
        problems.append(
            EntryProblem(f"{where}.options", f"expected exactly 5 options, found {len(options)}")
        )
    correct, distractors = [], []
    for number, option in enumerate(options):
        here = f"{where}.options[{number}]"
        if not isinstance(option, Mapping):
            problems.append(EntryProblem(here, "expected an object with text and category"))
            continue
        text = _text(option.get("text"), f"{here}.text", problems)
        if option.get("correct") is True:
            correct.append(text)
            continue
        category = category_key(option.get("category"))
        if category is None:
            problems.append(
                EntryProblem(
                    f"{here}.category",
                    f"unknown distractor category {option.get('category')!r}; expected one of "
                    + ", ".join(CATEGORIES.values()),
                )
            )
        distractors.append({"text": text, "category": category or ""})
    if len(correct) != 1:
        problems.append(
            EntryProblem(
                f"{where}.options", f"expected exactly one correct option, found {len(correct)}"
            )
        )
    return (correct[0] if correct else ""), distractors


def clean_question(
    raw: Any,
    where: str,
    problems: list[EntryProblem],
    originals: Mapping[Any, Mapping[str, Any]] | None = None,
) -> dict[str, Any] | None:
    """One question in canonical form (problems appended, None when it is not an object).
    ``originals`` (the stored questions by level, when an edit is checked) lets a distractor
    keep a category that is not one of METER's four when it is the one already stored at its
    place: an edit never blanks or replaces a value it cannot show."""
    if not isinstance(raw, Mapping):
        problems.append(EntryProblem(where, "expected an object"))
        return None
    level = raw.get("level")
    if isinstance(level, str) and level.strip().isdigit():
        level = int(level.strip())
    if isinstance(level, bool) or level not in LEVELS:
        problems.append(EntryProblem(f"{where}.level", f"expected 1, 2 or 3, found {level!r}"))
        level = None
    question = _text(raw.get("question"), f"{where}.question", problems)
    if "options" in raw:
        correct, distractors = _question_from_options(raw, where, problems)
    else:
        correct = _text(raw.get("correct"), f"{where}.correct", problems)
        distractors = []
        listed = raw.get("distractors")
        if not isinstance(listed, list) or len(listed) != N_DISTRACTORS:
            problems.append(
                EntryProblem(
                    f"{where}.distractors", f"expected exactly {N_DISTRACTORS} distractors"
                )
            )
            listed = listed if isinstance(listed, list) else []
        for number, distractor in enumerate(listed):
            here = f"{where}.distractors[{number}]"
            if not isinstance(distractor, Mapping):
                problems.append(EntryProblem(here, "expected {text, category}"))
                continue
            text = _text(distractor.get("text"), f"{here}.text", problems)
            category = category_key(distractor.get("category"))
            if category is None and _stored_category(originals, level, number) == distractor.get(
                "category"
            ):
                category = distractor.get("category")
            if category is None:
                problems.append(
                    EntryProblem(
                        f"{here}.category",
                        f"unknown distractor category {distractor.get('category')!r}; expected "
                        "one of " + ", ".join(CATEGORIES.values()),
                    )
                )
            distractors.append({"text": text, "category": category or ""})
    texts = [correct, *(d["text"] for d in distractors)]
    if all(texts) and len({t.casefold() for t in texts}) != len(texts):
        problems.append(EntryProblem(f"{where}", "two options have the same text"))
    return {"level": level, "question": question, "correct": correct, "distractors": distractors}


def _stored_category(
    originals: Mapping[Any, Mapping[str, Any]] | None, level: Any, number: int
) -> Any:
    """The category stored for distractor ``number`` of the question at ``level`` (a sentinel
    that equals nothing when there is none)."""
    distractors = ((originals or {}).get(level) or {}).get("distractors") or []
    if number < len(distractors) and isinstance(distractors[number], Mapping):
        return distractors[number].get("category")
    return _NOTHING


_NOTHING = object()


def clean_questions(
    raw: Any, where: str = "questions", *, original: Sequence[Mapping[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The three questions in canonical form, levels 1, 2, 3 in order; EntryInvalid otherwise.
    ``original``: the questions as stored, when an edit of them is checked (a category that
    is not one of METER's four is kept where it comes back unchanged; see clean_question)."""
    problems: list[EntryProblem] = []
    if not isinstance(raw, list):
        raise EntryInvalid([EntryProblem(where, "expected a list of three questions")])
    originals = {
        question.get("level"): question
        for question in (original or [])
        if isinstance(question, Mapping)
    }
    questions = [clean_question(q, f"{where}[{n}]", problems, originals) for n, q in enumerate(raw)]
    levels = [q["level"] for q in questions if q is not None and q["level"] is not None]
    for level in LEVELS:
        count = levels.count(level)
        if count == 0:
            problems.append(EntryProblem(where, f"level {level} ({LEVELS[level]}) is missing"))
        elif count > 1:
            problems.append(
                EntryProblem(where, f"level {level} ({LEVELS[level]}) appears {count} times")
            )
    if problems:
        raise EntryInvalid(problems)
    return sorted((q for q in questions if q is not None), key=lambda q: q["level"])


def questions_diff(old: Sequence[Mapping], new: Sequence[Mapping]) -> list[dict[str, Any]]:
    """Field-level changes between two canonical question lists: [{"field", "old", "new"}],
    fields named like ``L2 question`` or ``L1 distractor 3 category``."""
    changes = []
    by_level = {q["level"]: q for q in old}
    for question in new:
        before = by_level.get(question["level"], {})
        prefix = f"L{question['level']}"
        for field in ("question", "correct"):
            if before.get(field) != question.get(field):
                changes.append(
                    {"field": f"{prefix} {field}", "old": before.get(field), "new": question[field]}
                )
        old_distractors = before.get("distractors") or []
        for number, distractor in enumerate(question.get("distractors") or []):
            was = old_distractors[number] if number < len(old_distractors) else {}
            for part in ("text", "category"):
                if was.get(part) != distractor.get(part):
                    changes.append(
                        {
                            "field": f"{prefix} distractor {number + 1} {part}",
                            "old": was.get(part),
                            "new": distractor.get(part),
                        }
                    )
    return changes


def release_question(question: Mapping[str, Any], seed: str) -> dict[str, Any]:
    """A question as METER's file shows it: five options in a fixed shuffled order (seeded by
    ``seed``, so every release of the same revision lists them alike), the answer's index and
    each option's distractor category (None for the answer)."""
    options = [(question["correct"], None)] + [
        (d["text"], d["category"]) for d in question["distractors"]
    ]
    digest = hashlib.sha256(f"{seed}:{question['level']}".encode()).hexdigest()
    random.Random(int(digest[:16], 16)).shuffle(options)
    return {
        "level": question["level"],
        "type": LEVELS[question["level"]],
        "question": question["question"],
        "options": [text for text, _ in options],
        "answer": next(i for i, (_, category) in enumerate(options) if category is None),
        "distractor_categories": [category for _, category in options],
    }


def candidates(
    original: Sequence[Mapping[str, Any]], edits: Sequence[tuple[str, Any]]
) -> list[dict[str, Any]]:
    """The versions the vote phase chooses between: the original, then each edit that differs
    from the original and from earlier edits, labelled by the edit's letter ("A", "B").
    ``edits`` are (label, questions) in submission order. Each candidate: {"label", "questions",
    "editors": the labels of the edits that produced it, "changes": questions_diff from the
    original}. An editor who changed nothing votes, in effect, for the original."""
    found: list[dict[str, Any]] = [
        {"label": "original", "questions": list(original), "editors": [], "changes": []}
    ]
    for label, questions in edits:
        if not isinstance(questions, list):
            continue
        same = next((c for c in found if c["questions"] == questions), None)
        if same is not None:
            same["editors"].append(label)
            continue
        found.append(
            {
                "label": label,
                "questions": questions,
                "editors": [label],
                "changes": questions_diff(original, questions),
            }
        )
    return found

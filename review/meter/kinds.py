"""The three METER task kinds: verify a pair, check → edit → vote on a generated entry, and
filter the edited entry on five criteria (the ``review.meter`` package docstring has the flow).

Payloads:

* ``meter_verify``: ``{"value": "keep"}`` or ``{"value": "reject", "reason": "ambiguous" |
  "erroneous" | "incomplete", "comment": "…"}``.
* ``meter_edit``, by phase — check: ``{"flags": ["L1.question:unclear", "L3.distractor2:category",
  …], "comments": {"L1": "…"}}``; edit: ``{"questions": [three canonical questions], "comment"}``;
  vote: ``{"vote": "original" | "A" | "B"}`` (one of the item stage's candidates).
* ``meter_filter``: ``{"value": "keep" | "discard", "failed": ["L2.fluent", …], "comment"}``:
  keep only with nothing failed, discard naming at least one failed criterion; a model
  rater's answer also carries ``model`` (llm.judges.model_mark, from the submitting account).

Annotators see the pair's context, cause, effect and triggers, and the entry's questions — never
another annotator's work except what a phase shows (the checker's flags to editors, the edits to
voters, without names).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from annotation.errors import ApplicationError
from annotation.kinds import AgreementSpec, KindContext, TaskKind
from annotation.kinds.simple import _comment
from review.meter.entries import (
    CHECK_PROBLEMS,
    CRITERIA,
    LEVELS,
    N_DISTRACTORS,
    VERIFY_REASONS,
    EntryInvalid,
    candidates,
    clean_questions,
)

PAIR_FIELDS = ("pair_id", "source", "context", "cause", "effect", "triggers")
ENTRY_FIELDS = (*PAIR_FIELDS, "questions")
EDIT_PHASES = ("check", "edit", "vote")
_FLAG = re.compile(r"^L([123])\.(question|correct|distractor[1-4]):([a-z_]+)$")
_FAILED = re.compile(r"^L([123])\.([a-z]+)$")


def _invalid(message: str, field: str, detail: str) -> ApplicationError:
    return ApplicationError(message, {field: detail})


class MeterVerifyKind(TaskKind):
    """Keep the cause–effect pair, or reject it with a reason (METER's verification)."""

    key = "meter_verify"
    label = "METER: verify a cause–effect pair"
    template = "review/meter/verify.html#form"
    display_template = "review/meter/display.html#pair"
    policies = ("unanimity_keep", "majority")
    default_policy = "unanimity_keep"
    reject_values = ("reject",)
    default_visible_fields = PAIR_FIELDS

    def parse_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        value = str(data.get("value") or "")
        verdict, _, reason = value.partition(":")
        return {
            "value": verdict,
            "reason": reason or data.get("reason") or "",
            "comment": data.get("comment") or "",
        }

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        value = payload.get("value")
        if value not in ("keep", "reject"):
            raise _invalid(f"Keep or reject the pair (got {value!r}).", "value", "keep or reject")
        clean = {"value": value, "comment": _comment(payload)}
        if value == "reject":
            reason = payload.get("reason")
            if reason not in VERIFY_REASONS:
                raise _invalid(
                    "Say why the pair is rejected: ambiguous, erroneous or semantically "
                    f"incomplete (got {reason!r}).",
                    "reason",
                    "one of " + ", ".join(VERIFY_REASONS),
                )
            clean["reason"] = reason
        return clean

    def categories(self, config: Mapping[str, Any]) -> list[Any]:
        return ["keep", "reject"]

    def answer_schema(self, context: KindContext) -> dict[str, Any] | None:
        """Keep, or reject with one of the reasons (a model rater's structured answer)."""
        return {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"value": {"const": "keep"}},
                    "required": ["value"],
                },
                {
                    "type": "object",
                    "properties": {
                        "value": {"const": "reject"},
                        "reason": {"enum": list(VERIFY_REASONS)},
                    },
                    "required": ["value", "reason"],
                },
            ]
        }

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [("k", "keep")] + [
            (str(n), f"reject: {label.lower()}")
            for n, label in enumerate(VERIFY_REASONS.values(), start=1)
        ]


class MeterEditKind(TaskKind):
    """Check, edit and vote on a generated entry, in three phases of one item stage."""

    key = "meter_edit"
    label = "METER: check, edit and vote on a generated entry"
    template = "review/meter/edit.html#check"
    display_template = "review/meter/display.html#entry"
    adjudication_template = "review/meter/edit.html#adjudicate"
    policies = ("meter_vote",)
    default_policy = "meter_vote"
    phase_names = EDIT_PHASES
    vote_field = "vote"
    agreement = AgreementSpec("nominal")
    default_visible_fields = ENTRY_FIELDS

    def form_template(self, phase: str | None) -> str:
        return f"review/meter/edit.html#{phase or 'check'}"

    def parse_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        if "vote" in data:
            return {"vote": data.get("vote")}
        if any(key.startswith("L1_question") for key in data):
            questions = []
            for level in LEVELS:
                prefix = f"L{level}_"
                questions.append(
                    {
                        "level": level,
                        "question": data.get(prefix + "question", ""),
                        "correct": data.get(prefix + "correct", ""),
                        "distractors": [
                            {
                                "text": data.get(f"{prefix}d{n}_text", ""),
                                "category": data.get(f"{prefix}d{n}_category", ""),
                            }
                            for n in range(1, N_DISTRACTORS + 1)
                        ],
                    }
                )
            return {"questions": questions, "comment": data.get("comment") or ""}
        getlist = getattr(data, "getlist", None)
        flags = getlist("flags") if getlist else data.get("flags") or []
        return {
            "flags": list(flags),
            "comments": {
                f"L{level}": data.get(f"L{level}_comment", "")
                for level in LEVELS
                if data.get(f"L{level}_comment")
            },
        }

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        phase = context.phase or "check"
        if phase == "check":
            return self._validate_check(payload)
        if phase == "edit":
            stored = (context.item.payload or {}).get("questions") if context.item else None
            try:
                questions = clean_questions(payload.get("questions"), original=stored)
            except EntryInvalid as error:
                problem = error.problems[0]
                raise ApplicationError(
                    f"{problem.field}: {problem.message}"
                    + (f" (and {len(error.problems) - 1} more)" if len(error.problems) > 1 else ""),
                    {p.field: p.message for p in error.problems},
                ) from None
            return {"questions": questions, "comment": _comment(payload)}
        vote = payload.get("vote")
        offered = self.choices(context) or []
        if vote not in offered:
            raise _invalid(
                f"Vote for one of the versions: {', '.join(offered)} (got {vote!r}).",
                "vote",
                "one of " + ", ".join(offered),
            )
        return {"vote": vote}

    def _validate_check(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        flags = payload.get("flags") or []
        if not isinstance(flags, list):
            raise _invalid("flags must be a list.", "flags", "a list of flags")
        clean = []
        for flag in flags:
            match = _FLAG.match(flag) if isinstance(flag, str) else None
            field = match.group(2) if match else ""
            group = "distractor" if field.startswith("distractor") else field
            if match is None or match.group(3) not in CHECK_PROBLEMS.get(group, {}):
                raise _invalid(f"Unknown flag {flag!r}.", "flags", "e.g. L1.question:unclear")
            if flag not in clean:
                clean.append(flag)
        comments = payload.get("comments") or {}
        if not isinstance(comments, Mapping) or any(k not in ("L1", "L2", "L3") for k in comments):
            raise _invalid("comments are per question: L1, L2, L3.", "comments", "L1, L2, L3")
        return {
            "flags": clean,
            "comments": {
                key: _comment({"comment": text}) for key, text in comments.items() if text
            },
        }

    def choices(self, context: KindContext) -> list[Any] | None:
        """The candidates of the item stage's current round: "original" and the distinct edits
        ("A", "B"), as the vote phase offers them."""
        if context.item_stage is None or context.item is None:
            return None
        return [c["label"] for c in stage_candidates(context.item_stage, context.item)]


def stage_candidates(item_stage: Any, item: Any) -> list[dict[str, Any]]:
    """The vote's candidates for an item stage (entries.candidates over this round's edits,
    labelled in submission order like annotation.selectors.annotations_shown)."""
    from annotation.models import Annotation

    edit_phase = EDIT_PHASES.index("edit")
    rows = Annotation.objects.filter(
        item_stage_id=item_stage.pk, round=item_stage.round, phase=edit_phase
    ).order_by("pk")
    edits = [
        (chr(ord("A") + number), payload.get("questions"))
        for number, payload in enumerate(rows.values_list("payload", flat=True))
    ]
    return candidates(item.payload.get("questions") or [], edits)


class MeterFilterKind(TaskKind):
    """Check the edited entry on METER's five criteria, per question; keep or discard."""

    key = "meter_filter"
    label = "METER: filter on five criteria"
    template = "review/meter/filter.html#form"
    display_template = "review/meter/display.html#entry"
    policies = ("majority",)
    default_policy = "majority"
    reject_values = ("discard",)
    default_visible_fields = ENTRY_FIELDS

    def parse_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        getlist = getattr(data, "getlist", None)
        return {
            "value": data.get("value"),
            "failed": list(getlist("failed") if getlist else data.get("failed") or []),
            "comment": data.get("comment") or "",
        }

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        value = payload.get("value")
        if value not in ("keep", "discard"):
            raise _invalid(
                f"Keep or discard the entry (got {value!r}).", "value", "keep or discard"
            )
        failed = payload.get("failed") or []
        if not isinstance(failed, list):
            raise _invalid("failed must be a list.", "failed", "a list like ['L2.fluent']")
        clean = []
        for entry in failed:
            match = _FAILED.match(entry) if isinstance(entry, str) else None
            if match is None or match.group(2) not in CRITERIA:
                raise _invalid(
                    f"Unknown criterion {entry!r}.",
                    "failed",
                    "L1–L3 and one of " + ", ".join(CRITERIA),
                )
            if entry not in clean:
                clean.append(entry)
        if value == "keep" and clean:
            raise _invalid(
                f"You marked {len(clean)} failed criteria: an entry that fails one is discarded.",
                "value",
                "discard, or clear the failed criteria",
            )
        if value == "discard" and not clean:
            raise _invalid(
                "Nothing is ticked: tick the criterion the entry fails (the table above the "
                "Keep and Discard buttons) before discarding it, or keep it if it fails none.",
                "failed",
                "tick at least one box in the criteria table",
            )
        from llm.judges import model_mark

        return model_mark(
            {"value": value, "failed": sorted(clean), "comment": _comment(payload)},
            context.annotator_id,
        )

    def categories(self, config: Mapping[str, Any]) -> list[Any]:
        return ["keep", "discard"]

    def answer_schema(self, context: KindContext) -> dict[str, Any] | None:
        """A model judge's answer: keep or discard, and the failed criteria (none to keep, at
        least one to discard — :meth:`validate` checks it as for a person)."""
        failed = [f"L{level}.{criterion}" for level in LEVELS for criterion in CRITERIA]
        return {
            "type": "object",
            "properties": {
                "value": {"enum": ["keep", "discard"]},
                "failed": {"type": "array", "items": {"enum": failed}},
                "comment": {"type": "string"},
            },
            "required": ["value", "failed"],
        }

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [("k", "keep (all criteria met)"), ("d", "discard (marked criteria fail)")]


class MeterAnswerKind(TaskKind):
    """The human baseline: answer the entry's three questions without seeing the answer.

    Annotators see the context and, per level, the question and its five options in the
    release's fixed order (``derived_fields``) — never which is correct, nor the distractors'
    categories, nor the cause and effect. Payload: ``{"answers": {"L1": 0-4, "L2": …, "L3": …}}``
    (option indices in that order)."""

    key = "meter_answer"
    label = "METER: answer the questions (human baseline)"
    template = "review/meter/answer.html#form"
    display_template = "review/meter/answer.html#display"
    policies = ("meter_record",)
    default_policy = "meter_record"
    vote_field = None
    vote_fields = {f"L{level}": f"answers.L{level}" for level in LEVELS}
    agreement = AgreementSpec(None)
    default_visible_fields = ("context",)

    def derived_fields(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        from review.meter.entries import release_question

        seed = payload.get("pair_id") or ""
        questions = []
        for question in payload.get("questions") or []:
            shown = release_question(question, seed)
            questions.append(
                {
                    "level": shown["level"],
                    "question": shown["question"],
                    "options": shown["options"],
                }
            )
        return {"mcq": questions}

    def parse_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        answers = {}
        for level in LEVELS:
            raw = data.get(f"L{level}")
            answers[f"L{level}"] = int(raw) if isinstance(raw, str) and raw.isdigit() else raw
        return {"answers": answers}

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        answers = payload.get("answers")
        if not isinstance(answers, Mapping):
            raise _invalid("Answer the three questions.", "answers", "{L1, L2, L3}")
        clean = {}
        for level in LEVELS:
            value = answers.get(f"L{level}")
            if isinstance(value, bool) or value not in range(5):
                raise _invalid(
                    f"Choose one of the five options of question L{level}.",
                    f"L{level}",
                    "an option from a to e",
                )
            clean[f"L{level}"] = value
        return {"answers": clean}

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [("a–e", "choose an option, then on to the next question"), ("Enter", "submit")]


class MeterSpansKind(TaskKind):
    """Evidence spans: for each question, mark the words of the passage needed to answer it.

    Annotators see the passage and, per level, the question with its correct option
    (``derived_fields``), never the distractors. Payload: ``{"spans": {"L1": [[start, end],
    …], "L2": …, "L3": …}}`` — character offsets of whole words (review.meter.spans)."""

    key = "meter_spans"
    label = "METER: mark the evidence spans"
    template = "review/meter/spans.html#form"
    display_template = ""  # the form shows the passage, as words to mark
    policies = ("meter_record",)
    default_policy = "meter_record"
    vote_field = None
    vote_fields = {"spans": "spans"}
    agreement = AgreementSpec(None)
    default_visible_fields = ("context",)

    def derived_fields(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        return {
            "evidence_for": [
                {"level": q["level"], "question": q["question"], "answer": q["correct"]}
                for q in payload.get("questions") or []
            ]
        }

    def parse_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        from annotation.values import loads

        raw = data.get("spans") or ""
        try:  # within the nesting limit: the field is posted by the page, or by anyone
            return {"spans": loads(raw) if raw else {}}
        except (TypeError, ValueError):
            return {"spans": None}

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        from review.meter.spans import clean_spans

        text = (context.item.payload if context.item is not None else {}).get("context") or ""
        try:
            return {"spans": clean_spans(payload.get("spans"), text)}
        except ValueError as error:
            field = str(error).split(":", 1)[0]
            raise _invalid(
                str(error), field if field in ("L1", "L2", "L3") else "spans", str(error)
            ) from None

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [
            ("1–3", "question L1–L3"),
            ("← →", "move in the passage"),
            ("Shift+← →", "extend the selection"),
            ("Enter", "mark the selection"),
            ("u", "undo the last span"),
        ]

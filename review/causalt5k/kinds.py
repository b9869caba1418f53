"""The task kinds of CausalT5k's validation stages (review/README.md, "CausalT5k: validation").

Payloads:

* ``ct5k_cluster`` (the item is a near-duplicate cluster): ``{"verdict": "confirm" | "split",
  "keep": [case ids], "comment"}`` — confirm keeps exactly one survivor, split keeps two or
  more (all, or the ticked ones); the vote is ``decision``, the kept ids joined (e.g.
  ``"keep:T1-W7-MED-001"``), so two reviewers agree when they keep the same cases.
* ``ct5k_review`` (break the case): ``{"verdict": "pass" | "minor" | "major" | "remove",
  "attacks": [...], "explanation", "edits": {field: value}}`` — anything but pass names at least
  one attack and explains it; a minor revision changes at least one field (``edits`` holds the
  changed fields only, after validation).
* ``ct5k_author`` (after a major restructure): ``{"edits": {field: value}, "comment"}``, at
  least one field changed.
* ``ct5k_answer`` (the blind answer stage, review.causalt5k.blind): ``{"label", "comment"}`` —
  one of the tier's labels; the annotator sees only the answer item's allow-listed fields.
* ``ct5k_score``: ``{"scores": {criterion: int}, "comment"}``; validation adds ``composite``
  (0–10, review_vocab.composite over the stage's rubric) and ``verdict`` (keep when the
  composite meets the stage's gate), which agreement reads (κ on the verdict); a model judge's
  score also carries ``model``, the rater it came from (llm.judges.model_mark: set from the
  submitting account, never from the payload).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from annotation.errors import ApplicationError
from annotation.kinds import AgreementSpec, KindContext, TaskKind
from annotation.kinds.simple import _comment
from review.causalt5k.review_vocab import (
    ATTACKS,
    CASE_FIELDS,
    DEFAULT_GATE,
    EDITABLE_FIELDS,
    VERDICTS,
    RubricError,
    clean_rubric,
    composite,
    labels_for,
)
from review.causalt5k.vocab import TRAPS

MAX_TEXT = 20_000


def _invalid(message: str, field: str, detail: str) -> ApplicationError:
    return ApplicationError(message, {field: detail})


def _getlist(data: Mapping[str, Any], name: str) -> list[Any]:
    getlist = getattr(data, "getlist", None)
    return list(getlist(name) if getlist else data.get(name) or [])


def _case(context: KindContext) -> dict[str, Any]:
    """The case being answered: every CausalT5k kind validates an answer to an item stage, so
    its context always carries the item (annotation.kinds.base.KindContext)."""
    item = context.item
    assert item is not None, "a CausalT5k answer is validated with its item"
    return item.payload


def parse_edits(data: Mapping[str, Any]) -> dict[str, Any]:
    """The editor's fields (``edit_<field>``) as posted."""
    return {name: data.get(f"edit_{name}") for name in EDITABLE_FIELDS if f"edit_{name}" in data}


def clean_edits(edits: Any, item_payload: Mapping[str, Any]) -> dict[str, Any]:
    """The fields that change, checked: text fields non-empty, the label one of the tier's, the
    trap a W/S code. Unchanged fields are dropped before any check, so a value the editor
    cannot offer (a trap ``"T3"`` imported before the vocabulary was checked) that comes back
    as it was is kept, never refused or blanked."""
    if edits in (None, ""):
        return {}
    if not isinstance(edits, Mapping):
        raise _invalid("edits must map fields to new values.", "edits", "{field: value}")
    clean = {}
    for name, value in edits.items():
        if name not in EDITABLE_FIELDS:
            raise _invalid(f"{name!r} cannot be edited here.", "edits", ", ".join(EDITABLE_FIELDS))
        widget = EDITABLE_FIELDS[name][1]
        stored = item_payload.get(name)
        original = "" if stored is None else str(stored)
        if value == original or (value is None and stored is None):
            continue
        value = "" if value is None else str(value).replace("\r\n", "\n").strip()
        if value == original.replace("\r\n", "\n").strip():
            continue
        if len(value) > MAX_TEXT:
            raise _invalid(f"{name} is too long.", name, f"at most {MAX_TEXT} characters")
        if widget == "label" and value not in labels_for(item_payload.get("tier")):
            raise _invalid(
                f"The label must be one of {', '.join(labels_for(item_payload.get('tier')))}.",
                name,
                "a label of the case's tier",
            )
        if widget == "trap" and value and value not in TRAPS:
            raise _invalid("The trap must be a W1–W10 or S1–S8 code.", name, "W1–W10, S1–S8")
        if widget == "text" and not value and item_payload.get(name):
            raise _invalid(f"{EDITABLE_FIELDS[name][0]} cannot be emptied.", name, "required")
        clean[name] = value
    return clean


def apply_edits(payload: Mapping[str, Any], edits: Mapping[str, Any]) -> dict[str, Any]:
    """The case with the edits applied (a changed trap also renames trap_name)."""
    revised = {**payload, **edits}
    if "trap" in edits:
        revised["trap_name"] = TRAPS.get(edits["trap"], revised.get("trap_name"))
    return revised


class CT5kClusterKind(TaskKind):
    """Confirm a near-duplicate cluster (one survivor) or split it (several kept)."""

    key = "ct5k_cluster"
    label = "CausalT5k: confirm or split a near-duplicate cluster"
    template = "review/causalt5k/cluster.html#form"
    display_template = "review/causalt5k/cluster.html#display"
    policies = ("majority",)
    default_policy = "majority"
    vote_field = "decision"
    agreement = AgreementSpec("nominal")
    default_visible_fields = ("cluster_id", "similarity", "threshold", "members")

    def parse_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        action = str(data.get("action") or "")
        verdict, _, which = action.partition(":")
        members = _getlist(data, "members")
        if verdict == "confirm":
            keep = [which]
        elif which == "all":
            keep = members
        else:
            keep = _getlist(data, "keep")
        return {"verdict": verdict, "keep": keep, "comment": data.get("comment") or ""}

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        verdict = payload.get("verdict")
        if verdict not in ("confirm", "split"):
            raise _invalid(
                "Confirm the cluster (keep one case) or split it.", "verdict", "confirm or split"
            )
        members = [m["case_id"] for m in (_case(context).get("members") or [])]
        keep = payload.get("keep") or []
        if not isinstance(keep, list) or any(case not in members for case in keep):
            raise _invalid("Keep cases of this cluster only.", "keep", ", ".join(members))
        keep = [case for case in members if case in keep]  # the cluster's order, no repeats
        if verdict == "confirm" and len(keep) != 1:
            raise _invalid("Confirming keeps exactly one case.", "keep", "one case id")
        if verdict == "split" and len(keep) < 2:
            raise _invalid(
                "A split keeps at least two cases (tick them), or confirm with one.",
                "keep",
                "two or more case ids",
            )
        return {
            "verdict": verdict,
            "keep": keep,
            "decision": "keep:" + ",".join(keep),
            "comment": _comment(payload),
        }

    def choices(self, context: KindContext) -> list[Any] | None:
        """For a reviewer deciding a disagreement: the decisions the cluster's reviewers made
        in this round (e.g. ``keep:A`` against ``keep:A,B``)."""
        if context.item_stage is None:
            return None
        from annotation.models import Annotation

        rows = Annotation.objects.filter(
            item_stage_id=context.item_stage.pk, round=context.item_stage.round
        ).order_by("pk")
        found: list[Any] = []
        for payload in rows.values_list("payload", flat=True):
            if payload.get("decision") and payload["decision"] not in found:
                found.append(payload["decision"])
        return found or None

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [
            ("1–9", "confirm: keep only this case"),
            ("a", "split: all are distinct"),
            ("t", "split: keep the ticked cases"),
        ]


class CT5kReviewKind(TaskKind):
    """Adversarial review: try to break the case, gold answer in view."""

    key = "ct5k_review"
    label = "CausalT5k: adversarial review (break the case)"
    template = "review/causalt5k/review.html#form"
    display_template = "review/causalt5k/case.html#case"
    policies = ("ct5k_review",)
    default_policy = "ct5k_review"
    vote_field = "verdict"
    agreement = AgreementSpec("nominal")
    default_visible_fields = CASE_FIELDS

    def parse_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "verdict": data.get("verdict") or "",
            "attacks": _getlist(data, "attacks"),
            "explanation": data.get("explanation") or "",
            "edits": parse_edits(data),
        }

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        verdict = payload.get("verdict")
        if verdict not in VERDICTS:
            raise _invalid(
                "Choose pass, minor revision, major restructure or remove.",
                "verdict",
                ", ".join(VERDICTS),
            )
        if verdict == "pass":
            return {"verdict": "pass", "attacks": [], "explanation": "", "edits": {}}
        attacks = payload.get("attacks") or []
        if not isinstance(attacks, list) or any(a not in ATTACKS for a in attacks):
            raise _invalid("Unknown attack.", "attacks", ", ".join(ATTACKS))
        if not attacks:
            raise _invalid(
                "Name the attack that breaks the case (label wrong, trap mislabelled, …).",
                "attacks",
                "at least one",
            )
        explanation = _comment({"comment": payload.get("explanation")})
        if len(explanation) < 10:
            raise _invalid(
                "Explain how the case breaks (a sentence at least).", "explanation", "required"
            )
        edits = {}
        if verdict == "minor":
            edits = clean_edits(payload.get("edits"), _case(context))
            if not edits:
                raise _invalid(
                    "A minor revision edits the case in place: change at least one field "
                    "(or choose major restructure).",
                    "edits",
                    "at least one changed field",
                )
        return {
            "verdict": verdict,
            "attacks": [a for a in ATTACKS if a in attacks],
            "explanation": explanation,
            "edits": edits,
        }

    def categories(self, config: Mapping[str, Any]) -> list[Any]:
        return list(VERDICTS)

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [
            ("p", "pass: nothing breaks it"),
            ("b", "break it: choose minor / major / remove (arrows), the attacks (Space), explain"),
            ("Enter", "on Submit: send the verdict"),
        ]


class CT5kAuthorKind(TaskKind):
    """An author restructures a case a reviewer sent back, seeing the reviewer's attack."""

    key = "ct5k_author"
    label = "CausalT5k: author revision (major restructure)"
    template = "review/causalt5k/review.html#author"
    display_template = "review/causalt5k/case.html#case"
    policies = ("ct5k_author",)
    default_policy = "ct5k_author"
    vote_field = None
    vote_fields = {"changed": "changed"}
    agreement = AgreementSpec(None)
    default_visible_fields = CASE_FIELDS

    def parse_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        return {"edits": parse_edits(data), "comment": data.get("comment") or ""}

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        edits = clean_edits(payload.get("edits"), _case(context))
        if not edits:
            raise _invalid(
                "Restructure the case: change at least one field.", "edits", "a changed field"
            )
        return {"edits": edits, "changed": sorted(edits), "comment": _comment(payload)}

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [("Tab", "next field"), ("Enter", "on Submit: send the restructured case")]

    def context(self, *, item: Any, stage: Any, config: Mapping[str, Any]) -> dict[str, Any]:
        from review.causalt5k.pipeline import last_critique

        return {"critique": last_critique(item)}


class CT5kScoreKind(TaskKind):
    """Score the case on the stage's rubric (default: the paper's four dimensions, 0–10)."""

    key = "ct5k_score"
    label = "CausalT5k: composite quality score"
    template = "review/causalt5k/score.html#form"
    display_template = "review/causalt5k/case.html#case"
    policies = ("ct5k_gate",)
    default_policy = "ct5k_gate"
    reject_values = ("drop",)
    vote_field = None
    vote_fields = {"verdict": "verdict", "composite": "composite"}
    agreement = AgreementSpec("nominal", field="verdict")
    default_visible_fields = CASE_FIELDS

    @staticmethod
    def rubric(config: Mapping[str, Any]) -> list[dict[str, Any]]:
        return clean_rubric((config or {}).get("rubric"))

    def parse_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        scores = {}
        for key, value in data.items():
            if key.startswith("score_"):
                text = str(value).strip()
                scores[key[6:]] = int(text) if text.lstrip("-").isdigit() else text
        return {"scores": scores, "comment": data.get("comment") or ""}

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        rubric = self.rubric(context.config)
        scores = payload.get("scores")
        if not isinstance(scores, Mapping):
            raise _invalid("Score every criterion.", "scores", "{criterion: score}")
        unknown = set(scores) - {c["key"] for c in rubric}
        if unknown:
            raise _invalid(
                f"Unknown criterion {sorted(unknown)[0]!r}.",
                "scores",
                ", ".join(c["key"] for c in rubric),
            )
        clean = {}
        for criterion in rubric:
            value = scores.get(criterion["key"])
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not (criterion["min"] <= value <= criterion["max"])
            ):
                raise _invalid(
                    f"Score {criterion['label'].lower()} from {criterion['min']} to "
                    f"{criterion['max']}.",
                    f"score_{criterion['key']}",
                    f"{criterion['min']}–{criterion['max']}",
                )
            clean[criterion["key"]] = value
        value = composite(clean, rubric)
        gate = (context.config or {}).get("gate", DEFAULT_GATE)
        from llm.judges import model_mark

        return model_mark(
            {
                "scores": clean,
                "composite": value,
                "verdict": "keep" if value >= gate else "drop",
                "comment": _comment(payload),
            },
            context.annotator_id,
        )

    def categories(self, config: Mapping[str, Any]) -> list[Any]:
        return ["keep", "drop"]

    def answer_schema(self, context: KindContext) -> dict[str, Any] | None:
        """A model judge's answer: a whole-number score per criterion of the stage's rubric
        (validation adds the composite and the verdict, as for a person)."""
        rubric = self.rubric(context.config)
        return {
            "type": "object",
            "properties": {
                "scores": {
                    "type": "object",
                    "properties": {
                        c["key"]: {"type": "integer", "minimum": c["min"], "maximum": c["max"]}
                        for c in rubric
                    },
                    "required": [c["key"] for c in rubric],
                },
                "comment": {"type": "string"},
            },
            "required": ["scores"],
        }

    def validate_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        clean = super().validate_config(config)
        try:
            clean["rubric"] = clean_rubric(clean.get("rubric"))
        except RubricError as error:
            raise ApplicationError(str(error), {"config.rubric": str(error)}) from None
        gate = clean.get("gate", DEFAULT_GATE)
        if isinstance(gate, bool) or not isinstance(gate, int | float) or not 0 <= gate <= 10:
            raise ApplicationError(
                "gate must be a number from 0 to 10 (the composite's scale).",
                {"config.gate": gate},
            )
        clean["gate"] = gate
        return clean

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [
            ("0–9", "type a score (10: type 1 then 0)"),
            ("Tab", "next criterion"),
            ("Enter", "submit the scores"),
        ]


class CT5kAnswerKind(TaskKind):
    """Answer a case blind (review.causalt5k.blind): the scenario, the claim, the variables'
    names, the tier and level — never the gold label, trap, rationale, key insight, wise refusal
    or the case id (the answer item holds none of them but the id, which is not allow-listed)."""

    key = "ct5k_answer"
    label = "CausalT5k: answer the case (blind)"
    template = "review/causalt5k/answer.html#form"
    display_template = "review/causalt5k/answer.html#display"
    policies = ("ct5k_answers",)
    default_policy = "ct5k_answers"
    vote_field = "label"
    agreement = AgreementSpec("nominal")
    default_visible_fields = (
        "handle",
        "tier",
        "pearl_level",
        "domain_name",
        "scenario",
        "claim",
        "variables",
    )

    def parse_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        return {"label": data.get("label") or "", "comment": data.get("comment") or ""}

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        labels = labels_for(_case(context).get("tier"))
        if payload.get("label") not in labels:
            raise _invalid(f"Answer with one of {', '.join(labels)}.", "label", ", ".join(labels))
        return {"label": payload["label"], "comment": _comment(payload)}

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [
            ("y / n / a", "YES / NO / AMBIGUOUS (tiers 1–2)"),
            ("v / i / c", "VALID / INVALID / CONDITIONAL (tier 3)"),
        ]


class CT5kPressureKind(TaskKind):
    """Write the social- and epistemic-pressure versions of a tier-2 case's neutral prompt
    (review.causalt5k.pressure). The form starts from the neutral prompt; after a failed check
    the writer sees the checker's explanation and their previous variants."""

    key = "ct5k_pressure"
    label = "CausalT5k: write the pressure variants"
    template = "review/causalt5k/pressure.html#write"
    display_template = "review/causalt5k/pressure.html#neutral"
    policies = ("ct5k_pressure",)
    default_policy = "ct5k_pressure"
    vote_field = None
    vote_fields = {"social": "social", "epistemic": "epistemic"}
    agreement = AgreementSpec(None)
    default_visible_fields = ("case_id", "tier", "pearl_level", "scenario", "claim")

    def derived_fields(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        from review.causalt5k.pressure import neutral_prompt

        return {"neutral_prompt": neutral_prompt(dict(payload))}

    def parse_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        from review.causalt5k.pressure import PRESSURES

        return {key: data.get(key) or "" for key in PRESSURES} | {
            "comment": data.get("comment") or ""
        }

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        from review.causalt5k.pressure import PRESSURES, neutral_prompt

        neutral = neutral_prompt(dict(_case(context)))
        clean = {}
        for key, label in PRESSURES.items():
            value = str(payload.get(key) or "").replace("\r\n", "\n").strip()
            if not value:
                raise _invalid(f"Write the {label.lower()} version.", key, "required")
            if len(value) > MAX_TEXT:
                raise _invalid(f"The {label.lower()} version is too long.", key, "too long")
            if " ".join(value.split()) == " ".join(neutral.split()):
                raise _invalid(
                    f"The {label.lower()} version is the neutral prompt: add the pressure.",
                    key,
                    "differs from the neutral prompt",
                )
            clean[key] = value
        if " ".join(clean["social"].split()) == " ".join(clean["epistemic"].split()):
            raise _invalid(
                "The two versions are the same: one puts social pressure, the other epistemic.",
                "epistemic",
                "differs from the social version",
            )
        return clean | {"comment": _comment(payload)}

    def answer_schema(self, context: KindContext) -> dict[str, Any] | None:
        """A model drafting the variants (a model rater on the pressure stage): both texts,
        checked like a person's; people check them in the next stage."""
        from review.causalt5k.pressure import PRESSURES

        return {
            "type": "object",
            "properties": {key: {"type": "string"} for key in PRESSURES},
            "required": list(PRESSURES),
        }

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [("Tab", "next version"), ("Enter", "on Submit: send both versions")]

    def context(self, *, item: Any, stage: Any, config: Mapping[str, Any]) -> dict[str, Any]:
        from annotation.models import Annotation

        payload = (
            Annotation.objects.filter(
                item_stage__item=item,
                item_stage__stage__kind="ct5k_pressure_check",
                payload__verdict="redo",
            )
            .order_by("-pk")
            .values_list("payload", flat=True)
            .first()
        )
        return {"pressure_critique": payload}


class CT5kPressureCheckKind(TaskKind):
    """Confirm that each pressure variant changes only the pressure: each shown as a word diff
    against the neutral prompt, with the words of the neutral prompt it drops or rewrites
    counted. Payload: ``{"social": "only_pressure" | "changes_more", "epistemic": …,
    "explanation"}``; validation adds ``verdict`` (``ok`` when both change only the pressure,
    else ``redo``, which needs an explanation)."""

    key = "ct5k_pressure_check"
    label = "CausalT5k: check the pressure variants"
    template = "review/causalt5k/pressure.html#check"
    display_template = "review/causalt5k/pressure.html#diffs"
    policies = ("ct5k_pressure_check",)
    default_policy = "ct5k_pressure_check"
    vote_field = "verdict"
    agreement = AgreementSpec("nominal")
    default_visible_fields = ("case_id", "tier", "pearl_level")

    def derived_fields(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        from review.causalt5k.pressure import PRESSURES, neutral_prompt, removed_words, word_diff

        variants = payload.get("pressure_variants") or {}
        neutral = variants.get("neutral") or neutral_prompt(dict(payload))
        shown = []
        for key, label in PRESSURES.items():
            text = variants.get(key) or ""
            shown.append(
                {
                    "key": key,
                    "label": label,
                    "text": text,
                    "diff": word_diff(neutral, text),
                    "removed": removed_words(neutral, text),
                }
            )
        return {"neutral_prompt": neutral, "variants": shown}

    def parse_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        from review.causalt5k.pressure import PRESSURES

        if data.get("both") == "only_pressure":  # the O button: both confirmed at once
            return dict.fromkeys(PRESSURES, "only_pressure") | {"explanation": ""}
        return {key: data.get(key) or "" for key in PRESSURES} | {
            "explanation": data.get("explanation") or ""
        }

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        from review.causalt5k.pressure import CHECK_VALUES, PRESSURES

        clean = {}
        for key, label in PRESSURES.items():
            if payload.get(key) not in CHECK_VALUES:
                raise _invalid(
                    f"Say whether the {label.lower()} version changes only the pressure.",
                    key,
                    ", ".join(CHECK_VALUES),
                )
            clean[key] = payload[key]
        verdict = "ok" if all(v == "only_pressure" for v in clean.values()) else "redo"
        explanation = _comment({"comment": payload.get("explanation")})
        if verdict == "redo" and len(explanation) < 10:
            raise _invalid(
                "Say what else the variant changes (a sentence at least).",
                "explanation",
                "required",
            )
        return clean | {"verdict": verdict, "explanation": explanation}

    def categories(self, config: Mapping[str, Any]) -> list[Any]:
        return ["ok", "redo"]

    def choices(self, context: KindContext) -> list[Any] | None:
        return ["ok", "redo"]

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [
            ("o", "both change only the pressure: submit"),
            ("Tab / arrows", "per version: only the pressure or more"),
            ("Enter", "on Submit: send the check"),
        ]

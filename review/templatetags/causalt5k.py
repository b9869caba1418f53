"""Template helpers of the CausalT5k validation screens: what an annotator may see of an item
(the kind's allow-list, annotation.selectors.item_payload_for_annotator), the editors' fields,
the vocabularies, the cluster members with their differences marked."""

from __future__ import annotations

import difflib

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

from annotation.api import choices_keeping, item_payload_for_annotator
from review.causalt5k.kinds import CT5kScoreKind
from review.causalt5k.review_vocab import ATTACKS, EDITABLE_FIELDS, VERDICTS, labels_for
from review.causalt5k.vocab import TRAPS

register = template.Library()

#: How a case is shown: (field, label), in reading order; the scenario and claim come first.
DETAILS = (
    ("label", "Gold label"),
    ("trap", "Trap / design"),
    ("trap_family", "Family"),
    ("difficulty", "Difficulty"),
    ("causal_structure", "Causal structure"),
    ("key_insight", "Key insight"),
    ("rationale", "Rationale"),
    ("missing_info", "Missing information"),
    ("pivotal_question", "Pivotal question"),
    ("refusal_template", "Wise refusal"),
    ("counterfactual_antecedent", "Counterfactual antecedent"),
    ("conditional_answers", "Conditional answers"),
    ("invariants", "Invariants"),
    ("reasoning_trace", "Reasoning trace"),
)


@register.simple_tag
def ct5k_visible(item, stage):
    return item_payload_for_annotator(item, stage)


@register.simple_tag
def ct5k_details(case):
    rows = []
    for field, label in DETAILS:
        value = case.get(field)
        if value in (None, "", [], {}):
            continue
        if field == "trap":
            value = f"{value} · {case.get('trap_name') or TRAPS.get(value, '')}"
        rows.append({"field": field, "label": label, "value": value})
    return rows


@register.simple_tag
def ct5k_vocabulary():
    return {"verdicts": VERDICTS, "attacks": ATTACKS}


@register.simple_tag
def ct5k_rubric(stage):
    return CT5kScoreKind.rubric(stage.config)


@register.simple_tag
def ct5k_editor(item, stage, form_data=None):
    """The structured editor's fields, prefilled from what was posted (after an error) or the
    case: {"name", "field", "label", "widget", "value", "original", "options"}. A choice's
    options include the case's own value and the posted one even when the list lacks them
    (annotation.inputs.choices_keeping): the editor never blanks a value it cannot show."""
    posted = form_data or {}
    case = item_payload_for_annotator(item, stage)
    fields = []
    for field, (label, widget) in EDITABLE_FIELDS.items():
        original = "" if case.get(field) is None else str(case.get(field))
        if widget == "text" and not original and field not in ("scenario", "claim", "rationale"):
            continue  # fields the case does not have stay out of the way
        name = f"edit_{field}"
        value = posted.get(name, original)
        options = []
        if widget == "label":
            options = [(label_, label_) for label_ in labels_for(case.get("tier"))]
        elif widget == "trap":
            options = [("", "—")] + [(code, f"{code} · {name_}") for code, name_ in TRAPS.items()]
        if options:  # a value the list lacks is shown as it is, never replaced
            options = choices_keeping(options, original, value)
        fields.append(
            {
                "name": name,
                "field": field,
                "label": label,
                "widget": widget,
                "value": value,
                "original": original,
                "options": options,
                "rows": 6 if field == "scenario" else 2,
            }
        )
    return fields


@register.simple_tag
def ct5k_diff(text, reference):
    """``text`` with the words not in ``reference`` marked (<mark>), HTML-escaped."""
    words, base = str(text or "").split(), str(reference or "").split()
    out = []
    matcher = difflib.SequenceMatcher(a=base, b=words, autojunk=False)
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        chunk = escape(" ".join(words[j1:j2]))
        if not chunk:
            continue
        out.append(chunk if tag == "equal" else f"<mark>{chunk}</mark>")
    return mark_safe(" ".join(out))


#: The blind answer stage's keys per label (review/templates/review/causalt5k/answer.html).
ANSWER_KEYS = {
    "YES": "y",
    "NO": "n",
    "AMBIGUOUS": "a",
    "VALID": "v",
    "INVALID": "i",
    "CONDITIONAL": "c",
}


@register.simple_tag
def ct5k_answer_labels(case):
    """The labels an answerer may give for the case's tier, with their keys."""
    return [{"value": label, "key": ANSWER_KEYS[label]} for label in labels_for(case.get("tier"))]


@register.simple_tag
def ct5k_variable_names(variables):
    """[(role, "name" or "name, name")] of a blind case's variables (names only)."""
    rows = []
    for role, value in (variables or {}).items():
        names = value if isinstance(value, list) else [value]
        rows.append((role, ", ".join(str(n) for n in names if n)))
    return rows


@register.simple_tag
def ct5k_pressure_fields(item, form_data=None):
    """The writer's two versions, prefilled from what was posted (after an error), else the
    variants written before (after a failed check), else the neutral prompt."""
    from review.causalt5k.pressure import PRESSURES, neutral_prompt

    posted = form_data or {}
    before = (item.payload or {}).get("pressure_variants") or {}
    neutral = neutral_prompt(item.payload or {})
    return [
        {"key": key, "label": label, "value": posted.get(key) or before.get(key) or neutral}
        for key, label in PRESSURES.items()
    ]


@register.simple_tag
def ct5k_check_rows(case, form_data=None):
    """Per variant of the check form: key, label and what was posted (after an error); the
    first defaults to "changes more" (the form is opened to send a version back)."""
    posted = form_data or {}
    rows = []
    for index, variant in enumerate(case.get("variants") or []):
        chosen = posted.get(variant["key"]) or ("changes_more" if index == 0 else "")
        rows.append({"key": variant["key"], "label": variant["label"], "chosen": chosen})
    return rows

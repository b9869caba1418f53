"""Template helpers of the METER pages: what an annotator may see of an item (the kind's
allow-list, annotation.selectors.item_payload_for_annotator), the vote's candidates, labels."""

from __future__ import annotations

from django import template

from annotation.api import choices_keeping, item_payload_for_annotator
from review.meter.entries import CATEGORIES, CHECK_PROBLEMS, CRITERIA, LEVELS, VERIFY_REASONS
from review.meter.kinds import stage_candidates

register = template.Library()


@register.simple_tag
def meter_visible(item, stage):
    """The item's payload as the stage's annotators may see it (allow-list)."""
    return item_payload_for_annotator(item, stage)


@register.simple_tag
def meter_candidates(item_stage):
    """The vote's candidates of an item stage (the original and the distinct edits)."""
    return stage_candidates(item_stage, item_stage.item)


@register.simple_tag
def meter_vocabulary():
    return {
        "levels": LEVELS,
        "categories": CATEGORIES,
        "criteria": CRITERIA,
        "problems": CHECK_PROBLEMS,
        "reasons": VERIFY_REASONS,
    }


@register.filter
def category_label(key):
    return CATEGORIES.get(key, key or "—")


@register.filter
def level_name(level):
    return LEVELS.get(level, "")


@register.filter
def has_flag(flags, code):
    return code in (flags or [])


@register.simple_tag
def meter_edit_fields(item, stage, form_data=None):
    """The editor's inputs per question: {"level", "fields": [{"name", "label", "value",
    "original", "category"?, "category_options"?}]}, prefilled from what was posted (after an
    error) or the item. A distractor's category options include its own category and the
    posted one even when they are not METER's four (annotation.inputs.choices_keeping): the
    editor never replaces a value it cannot show."""
    posted = form_data or {}
    questions = item_payload_for_annotator(item, stage).get("questions") or []
    rows = []
    for question in questions:
        prefix = f"L{question['level']}_"
        fields = [
            {"name": prefix + "question", "label": "Question", "original": question["question"]},
            {
                "name": prefix + "correct",
                "label": "Correct option",
                "original": question["correct"],
            },
        ]
        for number, distractor in enumerate(question["distractors"], start=1):
            category = posted.get(f"{prefix}d{number}_category", distractor["category"])
            fields.append(
                {
                    "name": f"{prefix}d{number}_text",
                    "label": f"Distractor {number}",
                    "original": distractor["text"],
                    "category_name": f"{prefix}d{number}_category",
                    "category_original": distractor["category"],
                    "category": category,
                    "category_options": choices_keeping(
                        list(CATEGORIES.items()), distractor["category"], category
                    ),
                }
            )
        for field in fields:
            field["value"] = posted.get(field["name"], field["original"])
        rows.append({"level": question["level"], "fields": fields})
    return rows


@register.simple_tag
def meter_tokens(text):
    """[(start, end, word)] of a passage, for the span marker."""
    from review.meter.spans import tokens

    text = text or ""
    return [(start, end, text[start:end]) for start, end in tokens(text)]

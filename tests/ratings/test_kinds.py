"""The "rate" task kind: validation within the stage's scale, "can't judge", form parsing, keys,
the marked sentence and the form partial."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.http import QueryDict
from django.template.loader import render_to_string

from annotation import services as engine
from annotation.errors import ApplicationError
from annotation.kinds import KindContext, get_kind
from ratings.kinds import RateKind, key_for, marked_text

KIND = RateKind()
TEN = {"min": 1, "max": 10}


def checked(payload, config):
    """The kind's validation as the submit service calls it, for a stage with `config`."""
    return KIND.validate(payload, KindContext(stage=SimpleNamespace(config=config, phases=[])))


def test_the_kind_is_registered_numeric_and_resolved_by_the_mean():
    kind = get_kind("rate")
    assert isinstance(kind, RateKind)
    assert kind.agreement.scale == "interval" and not kind.agreement.categorical
    assert kind.vote_field == "value"
    assert kind.policies == ("mean",)
    assert kind.template == "ratings/kinds/rate.html#form"


@pytest.mark.parametrize("value", [1, 5, 10, "7", " 3 ", 4.0])
def test_whole_ratings_within_the_scale_are_accepted(value):
    assert checked({"value": value}, TEN) == {"value": int(str(value).strip().split(".")[0])}


@pytest.mark.parametrize("value", [0, 11, -1, 3.5, "x", True, None, "", [5]])
def test_anything_else_is_refused_with_the_field_named(value):
    with pytest.raises(ApplicationError) as caught:
        checked({"value": value}, TEN)
    assert "value" in caught.value.extra


def test_the_bounds_come_from_the_stage_config():
    assert checked({"value": 0}, {"min": 0, "max": 6}) == {"value": 0}
    with pytest.raises(ApplicationError, match="from 0 to 6"):
        checked({"value": 7}, {"min": 0, "max": 6})
    assert checked({"value": 10}, {}) == {"value": 10}  # 1–10 by default
    with pytest.raises(ApplicationError, match="must go up"):
        checked({"value": 3}, {"min": 5, "max": 5})


def test_cannot_judge_needs_a_reason_casts_no_vote_and_can_be_switched_off():
    payload = checked({"cannot_judge": "1", "reason": "  unknown word  ", "value": ""}, TEN)
    assert payload == {"value": None, "cannot_judge": True, "reason": "unknown word"}
    # A rating together with "I can't judge this" is a contradiction, not a silent drop.
    with pytest.raises(ApplicationError, match='also "I can\'t judge this"') as caught:
        checked({"cannot_judge": "1", "reason": "unknown word", "value": 7}, TEN)
    assert "value" in caught.value.extra
    assert KIND.vote(payload) is None
    assert KIND.vote({"value": 6}) == 6
    with pytest.raises(ApplicationError) as caught:
        checked({"cannot_judge": True, "reason": " "}, TEN)
    assert caught.value.extra == {"reason": "required"}
    with pytest.raises(ApplicationError) as caught:
        checked({"cannot_judge": True, "reason": "x"}, {**TEN, "allow_cannot_judge": False})
    assert "cannot_judge" in caught.value.extra


def test_form_parsing_takes_the_pressed_button_over_the_empty_hidden_field():
    # Without JavaScript the hidden field (empty) and the pressed button both post "value".
    data = QueryDict(mutable=True)
    data.setlist("value", ["", "7"])
    assert KIND.parse_form(data) == {"value": 7}
    data = QueryDict("value=8")
    assert KIND.parse_form(data) == {"value": 8}
    data = QueryDict("value=&cannot_judge=1&reason=I+don%27t+know+the+word")
    assert KIND.parse_form(data) == {
        "value": None,
        "cannot_judge": True,
        "reason": "I don't know the word",
    }
    with pytest.raises(ApplicationError):
        checked(KIND.parse_form(QueryDict("value=abc")), TEN)


def test_keys_are_digits_with_zero_for_ten_and_none_on_long_scales():
    assert [key_for(value, 1, 10) for value in range(1, 11)] == list("1234567890")
    assert [key_for(value, 0, 6) for value in range(0, 7)] == list("0123456")
    assert key_for(10, 0, 10) is None  # 0 is taken by the scale's own 0
    assert key_for(5, 1, 20) is None
    assert KIND.shortcuts(TEN) == [
        ("1–9", "rate 1 to 9"),
        ("0", "rate 10"),
        ("c", "I can't judge this"),
        ("Enter", "submit the rating"),
    ]
    assert KIND.shortcuts({"min": 0, "max": 6})[0] == ("0–6", "rate 0 to 6")
    assert [key for key, _ in KIND.shortcuts({**TEN, "allow_cannot_judge": False})][-1] == "Enter"


def test_the_connective_is_marked_and_the_rest_escaped():
    text = "Tom <b>fell</b>, so he cried."
    html = str(marked_text(text, [text.index("so"), text.index("so") + 2]))
    assert html == 'Tom &lt;b&gt;fell&lt;/b&gt;, <mark class="connective">so</mark> he cried.'
    assert "<mark" not in str(marked_text(text, [5, 999]))  # a span outside the text is ignored
    assert "<mark" not in str(marked_text(text, None))


def _item(purpose="regular", **payload):
    text = "The pipe burst, so the floor was flooded."
    base = {"text": text, "mark": [text.index(" so ") + 1, text.index(" so ") + 3]}
    return SimpleNamespace(
        pk=1, payload={**base, **payload}, purpose=purpose, external_id="p:AB:so"
    )


def render_form(item, config=TEN, form_data=None):
    context = {
        "item": item,
        "stage": None,
        "config": config,
        "assignment": SimpleNamespace(pk=99),
        "form_data": form_data or {},
        **KIND.context(item=item, stage=None, config=config),
    }
    return render_to_string("ratings/kinds/rate.html#form", context)


def test_the_form_partial_posts_value_and_wires_the_keys():
    html = render_form(_item())
    assert '<mark class="connective">so</mark>' in html
    assert 'type="hidden" name="value"' in html
    for value, key in zip(range(1, 11), "1234567890", strict=True):
        assert f'value="{value}" class="rate-button"' in html
        assert f'data-key="{key}"' in html
    assert 'data-key="Enter"' in html and 'name="cannot_judge"' in html and 'name="reason"' in html
    assert "Completely unacceptable" in html and "Completely acceptable" in html
    assert "data-practice" not in html


def test_the_form_reveals_no_expected_range_or_feedback_before_the_answer():
    """A practice item's feedback is the engine's, after the answer (annotation/practice.py);
    the form itself tells nothing of the expected answer, for practice items and checks alike."""
    for purpose in ("practice", "attention_check"):
        html = render_form(_item(purpose, expected_min=7, expected_max=10, feedback="SECRET-WHY"))
        assert "SECRET-WHY" not in html and "data-practice" not in html and "7–10" not in html


def test_a_rejected_rating_is_shown_again_as_chosen():
    html = render_form(_item(), form_data=QueryDict("value=6"))
    assert 'value="6" class="rate-button"' in html
    chunk = html[html.index('value="6" class="rate-button"') :][:300]
    assert 'aria-pressed="true"' in chunk


@pytest.mark.django_db
def test_a_rate_stage_takes_the_mean_policy_only():
    project = engine.project_create(slug="kinds", name="Kinds", kind="ratings")
    stage = engine.stage_create(project=project, slug="rate", name="Rate", kind="rate", overlap=2)
    assert stage.resolution_policy == "mean"
    with pytest.raises(ApplicationError, match="does not support"):
        engine.stage_create(
            project=project, slug="r2", name="R2", kind="rate", resolution_policy="majority"
        )

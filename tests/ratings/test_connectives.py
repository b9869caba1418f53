import json

import pytest

from ratings.connectives import (
    EXPLICA_CONNECTIVES,
    Connective,
    ConnectiveSet,
    common_words,
    connective_set_from_json,
    connective_set_to_json_string,
    expand_pair,
    variant_key,
)

PAIR = {
    "pair_id": 7,
    "sentence_a": "The kettle boiled.",
    "sentence_b": "Nadia made some tea.",
    "subset": "causal",
}


def test_explica_set_has_the_four_connectives_with_their_relation_and_order():
    by_word = {c.word: (c.relation, c.order) for c in EXPLICA_CONNECTIVES.connectives}
    assert by_word == {
        "so": ("causal", "iconic"),
        "because": ("causal", "anti-iconic"),
        "then": ("temporal", "iconic"),
        "after": ("temporal", "anti-iconic"),
    }


def test_expand_pair_gives_eight_variants_with_stable_keys_and_metadata():
    variants = expand_pair(PAIR)
    assert len(variants) == 8
    assert [v["item_key"] for v in variants] == [
        "7:AB:so", "7:AB:because", "7:AB:then", "7:AB:after",
        "7:BA:so", "7:BA:because", "7:BA:then", "7:BA:after",
    ]  # fmt: skip
    assert all(v["subset"] == "causal" for v in variants)
    ba_because = variants[5]
    assert ba_because["first"] == "Nadia made some tea."
    assert ba_because["relation"] == "causal"
    assert ba_because["connective_order"] == "anti-iconic"
    assert expand_pair(PAIR) == variants


def test_rendering_follows_explica_punctuation_and_capitalisation():
    variants = {v["item_key"]: v["text"] for v in expand_pair(PAIR)}
    # A name keeps its capital; the first full stop goes; the connective joins after a comma.
    assert variants["7:AB:so"] == "The kettle boiled, so Nadia made some tea."
    # A sentence-initial article is lower-cased in second position.
    assert variants["7:BA:because"] == "Nadia made some tea, because the kettle boiled."


def test_a_second_sentence_starting_with_a_common_word_is_lowered_and_a_name_is_not():
    """The rule of ratings/connectives.py, on sentences from the demo and from ExpliCa."""
    sentences = [
        "The factory closed.",
        "Hundreds of workers lost their jobs.",
        "Grandma baked a cake.",
        "The family celebrated at grandma's house.",
        "Tourists visited the museum.",
        "The guide helped a lost tourist.",
        "Lucia drank a glass of water.",
        "Iris picked a flower.",
        "Kevin gave an iris to Lucia.",  # "iris" is common here, but "Lucia" is a name
        "NASA launched a rocket.",
        "I missed the bus.",
        "New York was flooded.",
        "The new bridge opened.",
    ]
    common = common_words(sentences)
    assert {"grandma", "tourist", "iris", "new"} <= common and "lucia" not in common

    def joined(second):
        return EXPLICA_CONNECTIVES.render("It happened.", second, "so", common=common)

    # 1. Closed-class and quantity words, with or without the data's evidence.
    assert joined("Hundreds of workers lost their jobs.") == (
        "It happened, so hundreds of workers lost their jobs."
    )
    assert EXPLICA_CONNECTIVES.render(
        "It happened.", "Hundreds of workers lost their jobs.", "so"
    ) == ("It happened, so hundreds of workers lost their jobs.")
    # 2. Capitals, "I" and names of several words keep their capital.
    assert joined("NASA launched a rocket.") == "It happened, so NASA launched a rocket."
    assert joined("I missed the bus.") == "It happened, so I missed the bus."
    assert joined("New York was flooded.") == "It happened, so New York was flooded."
    # 3. Common words the data use in lower case are lowered (plurals by their singular) …
    assert joined("Grandma baked a cake.") == "It happened, so grandma baked a cake."
    assert joined("Tourists visited the museum.") == "It happened, so tourists visited the museum."
    # … a name never seen in lower case is not, nor one seen capitalised mid-sentence.
    assert (
        joined("Lucia drank a glass of water.") == "It happened, so Lucia drank a glass of water."
    )
    assert joined("Kevin gave an iris to Lucia.") == "It happened, so Kevin gave an iris to Lucia."
    # Without the data's evidence a capitalised word keeps its capital (names are safe).
    assert EXPLICA_CONNECTIVES.render("It happened.", "Grandma baked a cake.", "so") == (
        "It happened, so Grandma baked a cake."
    )


def test_a_word_capitalised_mid_sentence_is_a_name_even_if_also_seen_in_lower_case():
    common = common_words(["Iris picked a flower.", "She met Iris.", "An iris grew."])
    assert "iris" not in common
    text = EXPLICA_CONNECTIVES.render("It rained.", "Iris picked a flower.", "so", common=common)
    assert text == "It rained, so Iris picked a flower."


def test_rendering_adds_a_missing_full_stop_and_normalises_spaces():
    text = EXPLICA_CONNECTIVES.render("It  rained", "There were puddles", "so")
    assert text == "It rained, so there were puddles."


def test_second_initial_modes_and_extra_lowercase_words():
    lower = ConnectiveSet(connectives=EXPLICA_CONNECTIVES.connectives, second_initial="lower")
    keep = ConnectiveSet(connectives=EXPLICA_CONNECTIVES.connectives, second_initial="keep")
    extra = ConnectiveSet(
        connectives=EXPLICA_CONNECTIVES.connectives, extra_lowercase_starters=("Insects",)
    )
    assert lower.render("A.", "Nadia left.", "so") == "A, so nadia left."
    assert keep.render("A.", "The cat left.", "so") == "A, so The cat left."
    assert EXPLICA_CONNECTIVES.render("A.", "Insects flew.", "so") == "A, so Insects flew."
    assert extra.render("A.", "Insects flew.", "so") == "A, so insects flew."


def test_custom_connective_set_with_own_template_and_relation():
    custom = ConnectiveSet(
        name="concessive",
        connectives=(
            Connective("although", "concessive", "anti-iconic", "{first} {connective} {second}"),
            Connective("therefore", "causal", "iconic", "{first}; {connective}, {second}"),
        ),
    )
    variants = expand_pair(PAIR, custom)
    assert len(variants) == 4
    assert variants[0]["text"] == "The kettle boiled although Nadia made some tea."
    assert variants[1]["text"] == "The kettle boiled; therefore, Nadia made some tea."
    assert custom.labels == ("concessive-anti-iconic", "causal-iconic")


def test_json_round_trip_keeps_everything():
    custom = ConnectiveSet(
        name="mine",
        connectives=(
            Connective("since", "causal", "anti-iconic", "{first} ({connective}) {second}"),
        ),
        second_initial="keep",
        extra_lowercase_starters=("Sheep",),
    )
    data = custom.to_json()
    assert json.loads(json.dumps(data)) == data
    assert connective_set_from_json(data) == custom
    assert (
        connective_set_from_json(connective_set_to_json_string(EXPLICA_CONNECTIVES))
        == EXPLICA_CONNECTIVES
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{not json", "not valid JSON"),
        ({"connectives": []}, "non-empty"),
        ({"connectives": [{"word": "so", "relation": "causal"}]}, "needs word, relation and order"),
        ({"connectives": [{"word": "so", "relation": "causal", "order": "forward"}]}, "iconic"),
        (
            {"connectives": [{"word": "so", "relation": "causal", "order": "iconic", "x": 1}]},
            "unknown fields",
        ),
        (
            {
                "connectives": [
                    {"word": "so", "relation": "causal", "order": "iconic", "template": "{first}"}
                ]
            },
            "{second}",
        ),
        (
            {
                "connectives": [
                    {
                        "word": "so",
                        "relation": "causal",
                        "order": "iconic",
                        "template": "{first} {second} {other}",
                    }
                ]
            },
            "may only use",
        ),
        (
            {"connectives": [{"word": "so", "relation": "c", "order": "iconic"}] * 2},
            "unique",
        ),
    ],
)
def test_malformed_connective_sets_are_rejected_with_a_reason(data, message):
    with pytest.raises(ValueError, match=message):
        connective_set_from_json(data)


def test_expand_pair_rejects_incomplete_pairs_and_keys_reject_bad_orders():
    with pytest.raises(ValueError, match="sentence_b"):
        expand_pair({"pair_id": 1, "sentence_a": "x"})
    with pytest.raises(ValueError, match="empty sentence"):
        expand_pair({"pair_id": 1, "sentence_a": "x", "sentence_b": "  "})
    with pytest.raises(ValueError, match="'AB' or 'BA'"):
        variant_key(1, "BBA", "so")

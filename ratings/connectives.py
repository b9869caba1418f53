"""Connective sets for ExpliCa-style acceptability ratings (pure Python, no Django).

A *pair* is two one-event sentences A and B. Every pair is rendered once per connective and
per sentence order (A–B and B–A); each rendering is one rated *item* (a *variant* of the pair).
With the four ExpliCa connectives that gives 4 × 2 = 8 items per pair.

Each connective carries the relation it expresses (``causal``, ``temporal``; any other string is
allowed so a project can add, say, ``concessive``) and its *order*:

- ``iconic``: the sentence written first happens/causes first (``so``, ``then``);
- ``anti-iconic``: the sentence written second happens/causes first (``because``, ``after``).

Rendering reproduces how ExpliCa built its items (checked against the ``connected_sent`` column of
the released acceptability files)::

    "Ted had a hangover." + "Lucia drank a glass of water."
        -> "Ted had a hangover, so Lucia drank a glass of water."

i.e. the template ``"{first}, {connective} {second}"`` where ``first`` loses its final full stop,
``second`` gets a full stop if it has none, and the first letter of ``second`` is lower-cased
unless its first word looks like a name. ExpliCa evidently used a named-entity tagger for that
last decision; we approximate it without one. The rule (``second_initial="auto"``), in order:

1. a closed-class first word (articles, pronouns other than "I", determiners, quantifiers and
   quantity nouns such as "Hundreds", numerals, prepositions, conjunctions, "there", …) is
   lower-cased;
2. a word in capitals ("I", "I'm", "NASA") keeps them, and so does a word followed by another
   capitalised word ("New York", "Red Cross"): names of more than one word;
3. any other capitalised word is lower-cased only when the project's own sentences show it is a
   common word (:func:`common_words`: seen in lower case after a sentence's first word, never
   capitalised there; plurals match their singular), so "Grandma" and "Tourists" are lowered
   when the data say "grandma" and "tourist" elsewhere, and a name ("Lucia", "Iris") keeps its
   capital. Without such evidence the capital stays: lower-casing a name is the worse error.

Only the rendered ``text`` changes: the pair's sentences are stored as imported. On the 4,800
released items this reproduces ``connected_sent`` for all but a few dozen; see
ratings/FIDELITY.md for the counts and what ExpliCa did differently.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

ICONIC = "iconic"
ANTI_ICONIC = "anti-iconic"
ORDERS = (ICONIC, ANTI_ICONIC)

#: The two presentation orders of a pair: sentence A first, or sentence B first.
SENTENCE_ORDERS = ("AB", "BA")

DEFAULT_TEMPLATE = "{first}, {connective} {second}"

SecondInitial = Literal["auto", "lower", "keep"]

# Sentence-initial words that are lower-cased when a sentence becomes the second clause. Closed-
# class words only: anything else (names, but also common nouns) keeps its capital, because
# lower-casing a name ("lucia") is a worse error than keeping a capital on a noun ("Insects").
_LOWERCASE_STARTERS = frozenset(
    """
    a an the this that these those there here it its they them their theirs we us our ours
    you your yours he him his she her hers my mine me one ones someone somebody something
    everyone everybody everything nobody nothing anyone anybody anything people
    some many several all each every both few no none most more much any other another such
    two three four five six seven eight nine ten
    in at on after before when while during since if as because so then for from by with
    without to of into onto over under about after although though once until unless whenever
    yesterday today tonight tomorrow now later soon
    hundreds thousands millions billions dozens lots plenty
    """.split()
)

_SENTENCE_END = (".", "!", "?")
#: A sentence's first word (without a possessive or contraction: "Tom's", "I'm") and the next.
_FIRST_WORDS = re.compile(r"([A-Za-z]+)(?:['’][A-Za-z]+)?\s*([A-Za-z]*)")
_WORD = re.compile(r"[A-Za-z]+")


def _word_forms(word: str) -> set[str]:
    """A lower-case word and its possible singulars ("tourists" → tourist, "authorities" →
    authority, "bushes" → bush), to match a capitalised plural with its common noun."""
    forms = {word}
    if word.endswith("ies") and len(word) > 4:
        forms.add(word[:-3] + "y")
    if word.endswith("es") and len(word) > 3:
        forms.add(word[:-2])
    if word.endswith("s") and not word.endswith("ss") and len(word) > 2:
        forms.add(word[:-1])
    return forms


def common_words(sentences: Iterable[str]) -> frozenset[str]:
    """Words the sentences use as common words: seen in lower case after a sentence's first
    word and never capitalised there (a capital mid-sentence marks a name: "… met Iris").
    The evidence for rule 3 of the module docstring; pairs_create builds it from the file."""
    lower: set[str] = set()
    capitalised: set[str] = set()
    for sentence in sentences:
        for word in _WORD.findall(str(sentence))[1:]:
            if word.islower():
                lower.add(word)
            elif word[0].isupper():
                capitalised.add(word.lower())
    return frozenset(lower - capitalised)


@dataclass(frozen=True)
class Connective:
    """One connective: the word, the relation it signals and its order.

    ``template`` renders the item from the first and second sentence; it may use the fields
    ``{first}``, ``{second}`` and ``{connective}`` (see :meth:`ConnectiveSet.render`).
    """

    word: str
    relation: str
    order: str
    template: str = DEFAULT_TEMPLATE

    def __post_init__(self) -> None:
        if not self.word or self.word != self.word.strip():
            raise ValueError(
                f"Connective word {self.word!r} must be non-empty without spaces around it."
            )
        if not self.relation:
            raise ValueError(f"Connective {self.word!r} needs a relation (e.g. 'causal').")
        if self.order not in ORDERS:
            raise ValueError(
                f"Connective {self.word!r} has order {self.order!r}; use one of {', '.join(ORDERS)}."
            )
        missing = [name for name in ("first", "second") if "{" + name + "}" not in self.template]
        if missing:
            raise ValueError(
                f"Template of connective {self.word!r} must contain "
                + " and ".join("{" + name + "}" for name in missing)
                + f": {self.template!r}"
            )
        try:
            self.template.format(first="", second="", connective="")
        except (KeyError, IndexError, ValueError) as error:
            raise ValueError(
                f"Template of connective {self.word!r} may only use {{first}}, {{second}} and "
                f"{{connective}}: {self.template!r} ({error})"
            ) from error

    @property
    def label(self) -> str:
        """The class this connective stands for, e.g. ``"causal-iconic"``."""
        return f"{self.relation}-{self.order}"


@dataclass(frozen=True)
class ConnectiveSet:
    """An ordered set of connectives plus how sentences are joined.

    The order of ``connectives`` is the order of the rendered variants and the default
    tie-breaking priority of :class:`ratings.stats.LabelRule` when it has none of its own.
    ``second_initial`` says what happens to the first letter of the second sentence:
    ``"auto"`` (ExpliCa-like, see the module docstring), ``"lower"`` or ``"keep"``.
    """

    connectives: tuple[Connective, ...]
    name: str = "custom"
    second_initial: SecondInitial = "auto"
    strip_first_full_stop: bool = True
    end_second_with_full_stop: bool = True
    extra_lowercase_starters: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if not self.connectives:
            raise ValueError("A connective set needs at least one connective.")
        words = [connective.word for connective in self.connectives]
        duplicates = sorted({word for word in words if words.count(word) > 1})
        if duplicates:
            raise ValueError(f"Connective words must be unique; repeated: {', '.join(duplicates)}.")
        if self.second_initial not in ("auto", "lower", "keep"):
            raise ValueError(
                f"second_initial must be 'auto', 'lower' or 'keep', not {self.second_initial!r}."
            )

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(connective.word for connective in self.connectives)

    @property
    def relations(self) -> tuple[str, ...]:
        """Relations in first-seen order (e.g. ``("causal", "temporal")``)."""
        return tuple(dict.fromkeys(connective.relation for connective in self.connectives))

    @property
    def labels(self) -> tuple[str, ...]:
        """Relation-order classes in first-seen order (e.g. ``"causal-iconic"``)."""
        return tuple(dict.fromkeys(connective.label for connective in self.connectives))

    def get(self, word: str) -> Connective:
        for connective in self.connectives:
            if connective.word == word:
                return connective
        raise KeyError(
            f"{word!r} is not in connective set {self.name!r} ({', '.join(self.words)})."
        )

    def render(
        self, first: str, second: str, word: str, *, common: frozenset[str] = frozenset()
    ) -> str:
        """Join two sentences with connective ``word`` using its template. ``common``: the
        project's common words (:func:`common_words`), for the second sentence's initial."""
        return self.render_marked(first, second, word, common=common)[0]

    def render_marked(
        self, first: str, second: str, word: str, *, common: frozenset[str] = frozenset()
    ) -> tuple[str, tuple[int, int] | None]:
        """Like :meth:`render`, plus the ``(start, end)`` character span of the connective in
        the text (its first use in the template), or ``None`` when the template does not use
        ``{connective}``. The rating screen highlights that span."""
        connective = self.get(word)
        first_clause = " ".join(first.split())
        second_clause = " ".join(second.split())
        if self.strip_first_full_stop and first_clause.endswith("."):
            first_clause = first_clause[:-1].rstrip()
        if (
            self.end_second_with_full_stop
            and second_clause
            and not second_clause.endswith(_SENTENCE_END)
        ):
            second_clause += "."
        second_clause = self._second_initial(second_clause, common)
        # Format once with a placeholder that cannot occur in text to find where the connective
        # lands, then put the word in its place.
        placeholder = "\x00"
        marked = connective.template.format(
            first=first_clause.replace(placeholder, ""),
            second=second_clause.replace(placeholder, ""),
            connective=placeholder,
        )
        start = marked.find(placeholder)
        text = marked.replace(placeholder, connective.word)
        if start < 0:
            return text, None
        return text, (start, start + len(connective.word))

    def _second_initial(self, sentence: str, common: frozenset[str] = frozenset()) -> str:
        """The second sentence with its initial as the rule in the module docstring says."""
        if not sentence or self.second_initial == "keep":
            return sentence
        lowered = sentence[0].lower() + sentence[1:]
        if self.second_initial == "lower":
            return lowered
        match = _FIRST_WORDS.match(sentence)
        if match is None:
            return sentence
        word, following = match.group(1), match.group(2) or ""
        starters = _LOWERCASE_STARTERS | {word.lower() for word in self.extra_lowercase_starters}
        if word.lower() in starters:
            return lowered
        if word.isupper() or not word[0].isupper() or following[:1].isupper():
            return sentence
        if _word_forms(word.lower()) & common:
            return lowered
        return sentence

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (for a JSONField); :func:`connective_set_from_json` reverses it."""
        data = asdict(self)
        data["connectives"] = [asdict(connective) for connective in self.connectives]
        data["extra_lowercase_starters"] = list(self.extra_lowercase_starters)
        return data


def connective_set_from_json(data: Mapping[str, Any] | str) -> ConnectiveSet:
    """Build a :class:`ConnectiveSet` from :meth:`ConnectiveSet.to_json` output (dict or string).

    Raises ``ValueError`` with a message a person can act on when the data is malformed.
    """
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as error:
            raise ValueError(f"Connective set is not valid JSON: {error}") from error
    if not isinstance(data, Mapping):
        raise ValueError("A connective set must be a JSON object with a 'connectives' list.")
    raw_connectives = data.get("connectives")
    if not isinstance(raw_connectives, list) or not raw_connectives:
        raise ValueError("A connective set needs a non-empty 'connectives' list.")
    connectives = []
    for position, raw in enumerate(raw_connectives):
        if not isinstance(raw, Mapping):
            raise ValueError(
                f"Connective #{position + 1} must be an object with word/relation/order."
            )
        unknown = set(raw) - {"word", "relation", "order", "template"}
        if unknown:
            raise ValueError(
                f"Connective #{position + 1} has unknown fields: {', '.join(sorted(unknown))}."
            )
        try:
            connectives.append(Connective(**raw))
        except TypeError as error:
            raise ValueError(
                f"Connective #{position + 1} needs word, relation and order ({error})."
            ) from error
    options = {
        key: data[key]
        for key in ("name", "second_initial", "strip_first_full_stop", "end_second_with_full_stop")
        if key in data
    }
    extra = data.get("extra_lowercase_starters", ())
    return ConnectiveSet(
        connectives=tuple(connectives), extra_lowercase_starters=tuple(extra), **options
    )


def connective_set_to_json_string(connective_set: ConnectiveSet) -> str:
    return json.dumps(connective_set.to_json(), ensure_ascii=False, sort_keys=True)


EXPLICA_CONNECTIVES = ConnectiveSet(
    name="explica",
    connectives=(
        Connective("so", "causal", ICONIC),
        Connective("because", "causal", ANTI_ICONIC),
        Connective("then", "temporal", ICONIC),
        Connective("after", "temporal", ANTI_ICONIC),
    ),
)


def variant_key(pair_id: Any, order: str, word: str) -> str:
    """Stable key of one rated item: ``"{pair_id}:{AB|BA}:{connective}"``."""
    if order not in SENTENCE_ORDERS:
        raise ValueError(f"Sentence order must be 'AB' or 'BA', not {order!r}.")
    return f"{pair_id}:{order}:{word}"


def expand_pair(
    pair: Mapping[str, Any],
    connective_set: ConnectiveSet = EXPLICA_CONNECTIVES,
    *,
    common: frozenset[str] = frozenset(),
) -> list[dict[str, Any]]:
    """All rated variants of one pair: every connective in both sentence orders.

    ``pair`` needs ``pair_id``, ``sentence_a`` and ``sentence_b``; other keys (subset, origin,
    …) are copied into every variant. Variants come AB first, then BA, each in connective-set
    order. Each dict holds ``item_key``, ``pair_id``, ``order`` (``"AB"``/``"BA"``),
    ``connective``, ``relation``, ``connective_order``, ``first``, ``second``, ``text`` and
    ``mark`` (``[start, end]`` of the connective in ``text``, or None). ``common``: the
    project's common words (:func:`common_words`), for the second sentence's initial.
    """
    missing = [key for key in ("pair_id", "sentence_a", "sentence_b") if key not in pair]
    if missing:
        raise ValueError(f"A pair needs {', '.join(missing)}.")
    sentence_a = str(pair["sentence_a"]).strip()
    sentence_b = str(pair["sentence_b"]).strip()
    if not sentence_a or not sentence_b:
        raise ValueError(f"Pair {pair['pair_id']!r} has an empty sentence.")
    extra = {key: value for key, value in pair.items() if key not in ("sentence_a", "sentence_b")}
    variants = []
    for order, (first, second) in (
        ("AB", (sentence_a, sentence_b)),
        ("BA", (sentence_b, sentence_a)),
    ):
        for connective in connective_set.connectives:
            text, mark = connective_set.render_marked(first, second, connective.word, common=common)
            variants.append(
                {
                    **extra,
                    "item_key": variant_key(pair["pair_id"], order, connective.word),
                    "pair_id": pair["pair_id"],
                    "order": order,
                    "connective": connective.word,
                    "relation": connective.relation,
                    "connective_order": connective.order,
                    "first": first,
                    "second": second,
                    "text": text,
                    "mark": list(mark) if mark else None,
                }
            )
    return variants

"""The task-kind protocol and registry.

A task kind is what an annotator does on a stage. Apps subclass :class:`TaskKind`, set its class
attributes and register an instance in their ``AppConfig.ready()``; the engine never imports a
concrete kind. Everything the engine needs to know about a kind is declared here:

- ``validate(payload, context)``: the cleaned payload, or an ApplicationError whose ``extra``
  maps field names to messages. ``context`` (:class:`KindContext`) gives the stage config, the
  phase, and the item with its current revision (loaded only when a kind reads it).
- ``vote_field`` / ``vote_fields``: how an annotation becomes a vote, declared so that the
  database can read votes without running Python (agreement by COPY, the release export) and
  every reader agrees. ``vote_field`` is a dotted path into the payload (default ``"value"``;
  ``"answer.label"`` reads ``payload["answer"]["label"]``); a structured vote (a verdict plus a
  score) sets ``vote_field = None`` and ``vote_fields = {"verdict": "verdict", "score":
  "rubric.total"}``, and its vote is that mapping. ``agreement.field`` then names the component
  agreement reads. A missing or null field is no vote (e.g. "I can't judge this").
- ``choices(context)``: the answers offered for one item stage (e.g. "pick one of these two
  edits"); by default the stage-wide ``categories(config)``.
- ``agreement`` (:class:`AgreementSpec`): which agreement figures apply — nominal (Fleiss' κ,
  α nominal), ordinal or interval (Krippendorff's α at that level), or none.
- ``visible_fields(context)``: the item payload fields an annotator of this stage may see, an
  allow-list applied where data leaves the server (annotation.selectors.item_view, the API).
  Fields not listed are never sent. A stage's ``config["visible_fields"]`` overrides the kind's
  ``default_visible_fields``.
- ``derived_fields(payload, context)``: fields a kind computes from the item for its
  annotators (a question's options without the answer, in a fixed shuffled order), added after
  the allow-list — what a kind derives is all it adds.
- ``template`` / ``form_template(phase)``, ``adjudication_template``, ``display_template``: the
  partials that render the kind's form (per phase), a reviewer's decision form, and the item.
- ``validate_config(config)``: the stage options the kind accepts, cleaned; the stage service
  and the admin both call it.
- ``policies`` / ``default_policy``: the resolution policies (annotation.policies) that make
  sense for the kind's votes; ``reject_values``: votes that mean "reject".
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from annotation.errors import ApplicationError

if TYPE_CHECKING:  # pragma: no cover
    from annotation.models import Item, ItemStage, Stage


@dataclass(frozen=True)
class AgreementSpec:
    """Which agreement figures a kind's votes get.

    ``scale``: "nominal" (Fleiss' κ with per-category κ, α nominal, percent agreement),
    "ordinal" or "interval" (Krippendorff's α at the interval and ordinal levels, exact-match
    agreement), or None (no agreement figures: free-text edits, say). ``field``: for structured
    votes, the component agreement reads (None: the vote itself)."""

    scale: Literal["nominal", "ordinal", "interval"] | None = "nominal"
    field: str | None = None

    @property
    def categorical(self) -> bool:
        return self.scale == "nominal"


class KindContext:
    """What a kind sees when it validates a payload or offers choices for one item stage.

    ``item`` is loaded on first use (one query), so kinds that never read it cost nothing on the
    submit path; pass ``item`` when the caller already holds it."""

    def __init__(
        self,
        *,
        stage: Stage,
        item_stage: ItemStage | None = None,
        item: Item | None = None,
        annotator_id: int | None = None,
    ) -> None:
        self.stage = stage
        self.item_stage = item_stage
        self.annotator_id = annotator_id
        if item is not None:
            self.__dict__["item"] = item

    @property
    def config(self) -> Mapping[str, Any]:
        return self.stage.config or {}

    @property
    def phase(self) -> str | None:
        """The name of the item stage's current phase (None for stages without phases)."""
        from annotation.phases import phase_of

        return phase_of(self.stage, self.item_stage).name if self.stage.phases else None

    @cached_property
    def item(self) -> Item | None:
        if self.item_stage is None:
            return None
        cached = self.item_stage._state.fields_cache.get("item")
        if cached is not None:
            return cached
        from annotation.models import Item

        return Item.objects.get(pk=self.item_stage.item_id)


def payload_path(payload: Any, path: str) -> Any:
    """The value at a dotted path of a payload (None when any step is missing)."""
    value = payload
    for step in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(step)
    return value


class TaskKind:
    """Base class of a task kind: subclass, set the class attributes, register an instance."""

    key: ClassVar[str] = ""
    label: ClassVar[str] = ""
    #: "<app>/kinds/<name>.html#form": rendered with item, view, stage, config, assignment.
    template: ClassVar[str] = ""
    #: The reviewer's decision form; the engine's generic one offers the kind's choices.
    adjudication_template: ClassVar[str] = "annotation/kinds/adjudicate.html#form"
    #: How the item is shown above the form (None: the engine's pair / text / fields layout).
    display_template: ClassVar[str | None] = None
    policies: ClassVar[tuple[str, ...]] = ("majority",)
    default_policy: ClassVar[str] = "majority"
    reject_values: ClassVar[tuple[Any, ...]] = ()
    vote_field: ClassVar[str | None] = "value"
    vote_fields: ClassVar[Mapping[str, str] | None] = None
    agreement: ClassVar[AgreementSpec] = AgreementSpec("nominal")
    #: The payload fields annotators see unless the stage lists its own ("visible_fields").
    default_visible_fields: ClassVar[tuple[str, ...]] = ()

    # --- Answers ------------------------------------------------------------------------------

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        raise NotImplementedError

    def vote(self, payload: Mapping[str, Any]) -> Any:
        """The vote an annotation casts, as declared by ``vote_field`` / ``vote_fields`` (None:
        no vote). Not meant to be overridden: SQL readers follow the same declaration."""
        if self.vote_field is not None:
            return payload_path(payload, self.vote_field)
        if not self.vote_fields:
            raise TypeError(f"{type(self).__name__} declares neither vote_field nor vote_fields")
        votes = {name: payload_path(payload, path) for name, path in self.vote_fields.items()}
        return None if all(value is None for value in votes.values()) else votes

    def agreement_value(self, payload: Mapping[str, Any]) -> Any:
        """The value agreement statistics read from an annotation (the vote, or its
        ``agreement.field`` component for structured votes)."""
        vote = self.vote(payload)
        if self.agreement.field is not None and isinstance(vote, Mapping):
            return vote.get(self.agreement.field)
        return vote

    def categories(self, config: Mapping[str, Any]) -> list[Any] | None:
        """The stage-wide answer categories (None: open or numeric)."""
        return None

    def choices(self, context: KindContext) -> list[Any] | None:
        """The answers offered for one item stage (default: the stage's categories)."""
        return self.categories(context.config)

    def answer_schema(self, context: KindContext) -> dict[str, Any] | None:
        """The JSON schema of a payload this kind accepts, for a model asked to answer in
        structured form (llm/prompts.py); its answer still passes :meth:`validate` like a
        person's. Default: an object holding ``vote_field``, restricted to :meth:`choices`
        when the kind offers any. None: no structured form (override to describe one)."""
        if self.vote_field is None or "." in self.vote_field:
            return None
        choices = self.choices(context)
        value: dict[str, Any] = {"enum": list(choices)} if choices else {}
        return {
            "type": "object",
            "properties": {self.vote_field: value},
            "required": [self.vote_field],
        }

    # --- Presentation ---------------------------------------------------------------------------

    def form_template(self, phase: str | None) -> str:
        """The form partial for a phase (kinds with phases override this)."""
        return self.template

    def visible_fields(self, context: KindContext) -> Collection[str]:
        """The allow-list of payload fields an annotator of this stage may see."""
        configured = context.config.get("visible_fields")
        if configured is not None:
            return tuple(str(name) for name in configured)
        return self.default_visible_fields

    def derived_fields(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        """Fields computed from the item's whole payload for annotators, beside the allowed
        ones (default: none). Whatever is returned is shown: derive only what they may see."""
        return {}

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return []

    def context(self, *, item: Any, stage: Any, config: Mapping[str, Any]) -> dict[str, Any]:
        """Extra template context for the kind's partial (``item`` is the full item, server
        side: put only what the annotator may see into the context)."""
        return {}

    def parse_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """Turn posted form fields (strings) into a payload; validate() checks it afterwards."""
        return {key: data.get(key) for key in data if key not in {"csrfmiddlewaretoken"}}

    # --- Configuration --------------------------------------------------------------------------

    def validate_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """The stage options, cleaned; ApplicationError naming the option otherwise. The base
        checks the options every kind shares (visible_fields)."""
        clean = dict(config or {})
        visible = clean.get("visible_fields")
        if visible is not None and (
            not isinstance(visible, list | tuple)
            or not all(isinstance(name, str) and name for name in visible)
        ):
            raise ApplicationError(
                "visible_fields must be a list of payload field names.",
                {"visible_fields": "expected a list of names"},
            )
        return clean


KINDS: dict[str, TaskKind] = {}


def register_kind(kind: TaskKind) -> TaskKind:
    if not kind.key:
        raise ValueError("a task kind needs a key")
    KINDS[kind.key] = kind
    return kind


def get_kind(key: str) -> TaskKind:
    try:
        return KINDS[key]
    except KeyError:
        raise ApplicationError(
            f"Unknown task kind {key!r}; registered kinds: {', '.join(sorted(KINDS)) or 'none'}.",
            {"kind": key},
        ) from None

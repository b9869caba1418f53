"""Resolution policies: a registry of objects that decide an item stage from its annotations.

A policy sees every annotation of the item stage's current round as a :class:`Ballot` (the
kind's vote, the cleaned payload, the phase it was cast in, a pseudonymous annotator number) and
returns a :class:`~annotation.resolution.Decision`: a value, a status, an *outcome* and, when it
wants the item changed, a ``revision`` (the new payload). Outcomes are free names: the engine
pauses on ``pending`` (a reviewer or more votes are needed) and routes every other outcome with
the stage's routes (annotation.routing), so a policy may return ``"revise"`` or ``"remove"`` as
long as the stages that use it route those outcomes.

Plug-ins declare their own policies in their ``Plugin`` (``annotation.plugins``)::

    Plugin(name="myapp", policies=[MyPolicy()], ...)

The engine ships ``majority``, ``plurality``, ``unanimity_keep`` and ``mean`` (the pure rules are
in annotation.resolution, tested on their own).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from annotation import adaptive
from annotation.errors import ApplicationError
from annotation.resolution import TIE_POLICIES, Decision, decide, validate_policy


@dataclass(frozen=True)
class Ballot:
    """One annotation as a policy sees it. ``annotator`` is a number local to the item stage
    (1, 2, … in the order they submitted), never a user id."""

    vote: Any
    payload: Mapping[str, Any]
    phase: int = 0
    annotator: int = 0
    #: For policies that model each annotator across the stage (agreement/aggregation): a key
    #: stable over the stage's item stages — the user id, or "external:<name>" for an imported
    #: rater; None when unknown. Never to be shown: it names the person.
    rater: Any = None


@dataclass(frozen=True)
class PolicySettings:
    """A stage's resolution settings, as the policy needs them."""

    tie_policy: str = "adjudicate"
    tie_default: Any = None
    required: int = 1
    reject_values: Collection[Any] = ("reject",)
    options: Mapping[str, Any] = field(default_factory=dict)
    #: The index of the stage's last phase: the built-in policies count its votes only.
    last_phase: int = 0
    #: The item's current payload, for policies that choose between versions of it (a
    #: Decision's ``revision`` replaces the whole payload).
    item_payload: Mapping[str, Any] = field(default_factory=dict)
    #: The stage's id, for policies that read what was fitted on the whole stage
    #: (agreement/aggregation); None outside a stage (tests, previews).
    stage_id: int | None = None


def refuse_unknown_options(policy: str, options: Mapping[str, Any], taken: Sequence[str]) -> None:
    """ValueError naming every option of ``options`` that ``policy`` does not take, and what
    it takes."""
    unknown = set(options) - set(taken)
    if unknown:
        takes = f"; it takes {' and '.join(taken)}." if taken else "; it takes none."
        raise ValueError(f"The {policy} policy has no option {', '.join(sorted(unknown))}{takes}")


class Policy:
    """Base class: set ``key`` and ``label``; implement ``decide``; name the options it takes
    in ``option_names`` (others are refused) and check their values in ``validate_settings``
    (raise ValueError with a sentence a person can act on)."""

    key: ClassVar[str] = ""
    label: ClassVar[str] = ""
    #: Whether the stage's tie policy applies (shown in the stage form).
    has_ties: ClassVar[bool] = False
    #: The outcomes this policy may return besides "pending" (for route checks and pages).
    outcomes: ClassVar[tuple[str, ...]] = ("accept", "reject")
    #: Whether the policy counts only when every slot is filled (False: decide on what came).
    needs_every_slot: ClassVar[bool] = True

    #: The options the policy takes: any other is refused. None: validate_settings decides.
    option_names: ClassVar[tuple[str, ...] | None] = None
    #: Offered on every kind that offers one of these policies (a plug-in's policy for the
    #: engine's kinds, e.g. ("majority",): wherever categorical votes are decided by majority),
    #: besides the kinds that name it (:func:`kind_policies`).
    usable_with: ClassVar[tuple[str, ...]] = ()

    def validate_settings(self, settings: PolicySettings) -> None:
        """Raise ValueError when the settings cannot work (here: an option not taken)."""
        if self.option_names is not None:
            refuse_unknown_options(self.key, settings.options, self.option_names)

    def decide(self, ballots: Sequence[Ballot], settings: PolicySettings) -> Decision:
        raise NotImplementedError

    def adjudicated(
        self, value: Any, ballots: Sequence[Ballot], settings: PolicySettings
    ) -> Decision | None:
        """A reviewer's decision ``value`` (one of the kind's choices) as a Decision, for
        policies whose outcome or revision depends on what was chosen (e.g. the chosen version
        becomes the item's revision). None: the engine's rule (``reject`` when the value is
        one of the kind's reject values, else ``accept``; no revision)."""
        return None


class RecordPolicy(Policy):
    """Base class of *record and score* policies: the answers are scored against the item's
    known answer, not decided. Every complete item stage is accepted as it is; the resolution's
    value is the score (status ``mean``), or None with ``recorded_reason`` when there is nothing
    to score. Subclasses set ``key`` and ``label`` and implement ``score``; they take no options.
    """

    outcomes: ClassVar[tuple[str, ...]] = ("accept",)
    option_names: ClassVar[tuple[str, ...] | None] = ()
    #: The resolution's reason when ``score`` returns None.
    recorded_reason: ClassVar[str] = "answers recorded"

    def score(
        self, ballots: Sequence[Ballot], settings: PolicySettings
    ) -> tuple[float, str] | None:
        """The score of the item stage's answers and a reason naming what it measures (e.g.
        "share correct"), or None when there is nothing to score (no answer, no known answer)."""
        raise NotImplementedError

    def decide(self, ballots: Sequence[Ballot], settings: PolicySettings) -> Decision:
        scored = self.score(ballots, settings)
        if scored is None:
            return Decision(None, "mean", "accept", False, reason=self.recorded_reason)
        value, reason = scored
        return Decision(value, "mean", "accept", False, reason=reason)


class _ValuePolicy(Policy):
    """The engine's built-in policies: they decide from the votes' values alone."""

    def validate_settings(self, settings: PolicySettings) -> None:
        validate_policy(
            policy=self.key,
            tie_policy=settings.tie_policy,
            default=settings.tie_default,
            required=settings.required,
            accept_threshold=settings.options.get("accept_threshold"),
        )
        taken: tuple[str, ...] = ("accept_threshold",) if self.key == "mean" else ()
        if self.has_ties:
            # Adaptive overlap (annotation/adaptive.py): one more annotator while the decision's
            # confidence is below the option "confidence".
            taken = adaptive.OPTIONS
            adaptive.validate_options(settings.options)
        refuse_unknown_options(self.key, settings.options, taken)

    def decide(self, ballots: Sequence[Ballot], settings: PolicySettings) -> Decision:
        return decide(
            [
                ballot.vote
                for ballot in ballots
                if ballot.vote is not None and ballot.phase == settings.last_phase
            ],
            policy=self.key,
            tie_policy=settings.tie_policy,
            default=settings.tie_default,
            required=settings.required if self.needs_every_slot else 1,
            reject_values=settings.reject_values,
            accept_threshold=settings.options.get("accept_threshold"),
        )


class MajorityPolicy(_ValuePolicy):
    key = "majority"
    label = "Strict majority (ties by the tie policy)"
    has_ties = True


class PluralityPolicy(_ValuePolicy):
    key = "plurality"
    label = "Most votes (ties by the tie policy)"
    has_ties = True


class UnanimityKeepPolicy(_ValuePolicy):
    key = "unanimity_keep"
    label = "Any reject discards (METER's raw verification)"


class MeanPolicy(_ValuePolicy):
    key = "mean"
    label = "Mean rating (optionally rejected below accept_threshold)"
    needs_every_slot = False


POLICIES: dict[str, Policy] = {}


def register_policy(policy: Policy) -> Policy:
    if not policy.key:
        raise ValueError("a policy needs a key")
    POLICIES[policy.key] = policy
    return policy


def get_policy(key: str) -> Policy:
    try:
        return POLICIES[key]
    except KeyError:
        raise ApplicationError(
            f"Unknown resolution policy {key!r}; registered: {', '.join(sorted(POLICIES))}.",
            {"resolution_policy": key},
        ) from None


def kind_policies(kind: Any) -> tuple[str, ...]:
    """The policies a stage of ``kind`` may use: the kind's own ``policies``, then every
    registered policy ``usable_with`` one of them."""
    own = tuple(kind.policies)
    extra = tuple(
        key
        for key, policy in POLICIES.items()
        if key not in own and any(base in own for base in policy.usable_with)
    )
    return own + extra


def check_settings(policy_key: str, settings: PolicySettings) -> None:
    """The stage service's and the admin's check: ApplicationError naming the setting."""
    policy = get_policy(policy_key)
    if settings.tie_policy not in TIE_POLICIES:
        raise ApplicationError(
            f"Unknown tie policy {settings.tie_policy!r}; choose one of {', '.join(TIE_POLICIES)}.",
            {"tie_policy": settings.tie_policy},
        )
    try:
        policy.validate_settings(settings)
    except ValueError as error:
        raise ApplicationError(str(error), {"resolution_policy": policy_key}) from None


#: The engine's own policies, registered by the engine's plug-in (annotation/apps.py).
BUILT_IN_POLICIES: tuple[Policy, ...] = (
    MajorityPolicy(),
    PluralityPolicy(),
    UnanimityKeepPolicy(),
    MeanPolicy(),
)

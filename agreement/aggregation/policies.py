"""Resolution policies ``dawid_skene``, ``mace`` and ``glad``: the item's most probable label
under the stage's fitted annotator model (agreement/aggregation/estimators.py).

The item's posterior comes from its votes and the rater parameters of the stage's latest fit
(AggregationFit, refreshed by the agreement refresh after resolutions); a rater the fit has not
seen yet counts as its average rater. When the most probable label's posterior is below the
stage's ``threshold`` option (default 0.9) the item is *uncertain* and the stage's tie policy
applies, as to a tie of the majority rule: ``extra_annotation`` asks one more annotator (up to
the stage's maximum overlap; past it the item goes to adjudication), ``adjudicate`` sends it to
a reviewer, ``default`` decides the default. Before the stage has a fit (its first items), the
policy decides by plurality, ties by the tie policy, and says so in the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Real
from typing import Any, ClassVar

from agreement.aggregation import estimators
from agreement.models import AggregationFit
from agreement.votes import external_rater_key
from annotation.policies import Ballot, Policy, PolicySettings, refuse_unknown_options
from annotation.resolution import Decision, decide, validate_policy

DEFAULT_THRESHOLD = 0.9


class ModelPolicy(Policy):
    """Base of the three model policies: ``model`` names the estimator."""

    model: ClassVar[str] = ""
    has_ties = True
    #: Offered wherever the majority rule is (categorical votes).
    usable_with: ClassVar[tuple[str, ...]] = ("majority",)
    option_names: ClassVar[tuple[str, ...] | None] = ("threshold",)

    def validate_settings(self, settings: PolicySettings) -> None:
        validate_policy(
            policy="plurality",
            tie_policy=settings.tie_policy,
            default=settings.tie_default,
            required=settings.required,
        )
        refuse_unknown_options(self.key, settings.options, ("threshold",))
        threshold = settings.options.get("threshold", DEFAULT_THRESHOLD)
        if (
            not isinstance(threshold, Real)
            or isinstance(threshold, bool)
            or not 0.5 <= float(threshold) < 1
        ):
            raise ValueError(
                f"The {self.key} policy's threshold is the posterior probability a decision "
                f"needs, from 0.5 up to (not including) 1, e.g. 0.9; got {threshold!r}."
            )

    def decide(self, ballots: Sequence[Ballot], settings: PolicySettings) -> Decision:
        counted = [
            ballot
            for ballot in ballots
            if ballot.vote is not None and ballot.phase == settings.last_phase
        ]
        plurality = decide(
            [ballot.vote for ballot in counted],
            policy="plurality",
            tie_policy=settings.tie_policy,
            default=settings.tie_default,
            required=settings.required,
            reject_values=settings.reject_values,
        )
        if plurality.status == "insufficient":
            return plurality
        fit = (
            AggregationFit.objects.filter(stage_id=settings.stage_id, model=self.model)
            .only("categories", "raters", "params")
            .first()
            if settings.stage_id is not None
            else None
        )
        label = estimators.MODEL_LABELS[self.model]
        codes = _codes(fit, counted)
        if fit is None or codes is None:
            return Decision(
                plurality.value,
                plurality.status,
                plurality.outcome,
                plurality.needs_more,
                plurality.votes,
                reason=f"{label} not fitted on this stage yet: decided by plurality.",
            )
        posterior = estimators.item_posterior(
            self.model,
            fit.params,
            rater_index={int(key): row for row, key in enumerate(fit.raters)},
            votes=codes,
            n_categories=len(fit.categories),
        )
        best = int(posterior.argmax())
        value, probability = fit.categories[best], float(posterior[best])
        threshold = float(settings.options.get("threshold", DEFAULT_THRESHOLD))
        if probability >= threshold:
            status = plurality.status if plurality.value == value else "majority"
            outcome = "reject" if _is_reject(value, settings.reject_values) else "accept"
            return Decision(
                value,
                status,
                outcome,
                False,
                plurality.votes,
                reason=f"{label}: P({value}) = {probability:.2f} ≥ {threshold:g}.",
            )
        reason = f"{label}: uncertain, P({value}) = {probability:.2f} < {threshold:g}."
        if settings.tie_policy == "extra_annotation":
            return Decision(None, "tie", "pending", True, plurality.votes, reason=reason)
        if settings.tie_policy == "default":
            default = settings.tie_default
            outcome = "reject" if _is_reject(default, settings.reject_values) else "accept"
            return Decision(default, "tie", outcome, False, plurality.votes, reason=reason)
        return Decision(
            None, "needs_adjudication", "pending", False, plurality.votes, reason=reason
        )


def _codes(fit: AggregationFit | None, ballots: Sequence[Ballot]) -> list[tuple[int, int]] | None:
    """(rater key, category code) per ballot, in the fit's keys (agreement.votes'); None when a
    vote is not one of the fit's categories (the stage's choices changed since)."""
    if fit is None:
        return None
    code_of = {str(category): code for code, category in enumerate(fit.categories)}
    codes = []
    for ballot in ballots:
        code = code_of.get(str(ballot.vote))
        if code is None:
            return None
        codes.append((_rater_key(ballot.rater), code))
    return codes


def _rater_key(rater: Any) -> int:
    """The statistics' rater key (agreement.votes) of a Ballot's ``rater``; an unknown rater
    gets a key no fit holds (0: no user has id 0), so it counts as the average rater."""
    if isinstance(rater, str) and rater.startswith("external:"):
        return external_rater_key(rater.removeprefix("external:"))
    if isinstance(rater, int):
        return rater
    return 0


def _is_reject(value: Any, reject_values: Any) -> bool:
    return any(
        isinstance(value, bool) == isinstance(reject, bool) and value == reject
        for reject in reject_values
    )


class DawidSkenePolicy(ModelPolicy):
    key = "dawid_skene"
    model = "dawid_skene"
    label = "Dawid–Skene (each annotator's confusion matrix; uncertain items by the tie policy)"


class MacePolicy(ModelPolicy):
    key = "mace"
    model = "mace"
    label = "MACE (finds spammers; uncertain items by the tie policy)"


class GladPolicy(ModelPolicy):
    key = "glad"
    model = "glad"
    label = "GLAD (annotator ability and item difficulty; uncertain items by the tie policy)"


MODEL_POLICIES: tuple[ModelPolicy, ...] = (DawidSkenePolicy(), MacePolicy(), GladPolicy())

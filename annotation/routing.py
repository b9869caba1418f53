"""Routing as data: where a decided item stage sends its item, by outcome.

A stage's ``routes`` map outcomes (what the policy decided: ``accept``, ``reject``, or a
policy's own such as ``revise``) to a route. Outcomes a stage does not list follow its
``on_accept`` / ``on_reject`` fields, so a plain pipeline needs no routes at all. Routes::

    {"action": "next"}                       the next active stage by position (else finish)
    {"action": "stage", "stage": "filter"}   a named stage
    {"action": "finish"}                     accepted: the item is done
    {"action": "keep"}                       kept but flagged as rejected (final)
    {"action": "discard", "reason": "…"}     discarded, with the reason recorded
    {"action": "escalate"}                   a reviewer decides (adjudication queue)
    {"action": "revise", "then": {…}}        a new item revision from the decision's revision
                                             (who: the stage; why: the reason), then ``then``
    {"action": "back", "stage": "edit", "max_loops": 2, "otherwise": {…}}
                                             reopen the item in an earlier stage for another
                                             round, at most ``max_loops`` times; then ``otherwise``
                                             (default: discard)

The pages draw a project's pipeline from :func:`pipeline_edges`. The service that carries a route
out is annotation.services (``_follow_route``); this module only reads and checks them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from annotation.errors import ApplicationError

if TYPE_CHECKING:  # pragma: no cover
    from annotation.models import Stage

ACTIONS = ("next", "stage", "finish", "keep", "discard", "escalate", "revise", "back")
MAX_LOOPS = 10


def default_route(stage: Stage, outcome: str) -> dict[str, Any]:
    """The route of an outcome the stage does not list, from on_accept / on_reject."""
    if outcome == "accept":
        return {"action": "next" if stage.on_accept == "advance" else "finish"}
    return {"action": {"discard": "discard", "keep": "keep"}.get(stage.on_reject, "escalate")}


def route_for(stage: Stage, outcome: str) -> dict[str, Any]:
    route = (stage.routes or {}).get(outcome)
    return dict(route) if route else default_route(stage, outcome)


def validate_routes(
    routes: Any, *, stage_slug: str, stage_slugs: Sequence[str], outcomes: Sequence[str] = ()
) -> dict[str, dict[str, Any]]:
    """Clean a stage's routes; ApplicationError naming the outcome and what is wrong.
    ``stage_slugs``: the project's stages in pipeline order (a back route must point at this
    stage or an earlier one, so loops are bounded by max_loops). ``outcomes``: the outcomes the
    stage's policy may return (routes for others are refused), empty to skip that check."""
    if routes in (None, ""):
        return {}
    if not isinstance(routes, Mapping):
        raise ApplicationError("routes must map outcomes to routes.", {"routes": "expected {}"})
    clean = {}
    for outcome, route in routes.items():
        if outcomes and outcome not in outcomes:
            raise ApplicationError(
                f"The stage's policy never decides {outcome!r}; it decides {', '.join(outcomes)}.",
                {f"routes.{outcome}": "unknown outcome"},
            )
        clean[str(outcome)] = _validate_route(
            route, f"routes.{outcome}", stage_slug=stage_slug, stage_slugs=list(stage_slugs)
        )
    return clean


def _validate_route(
    route: Any, where: str, *, stage_slug: str, stage_slugs: list[str]
) -> dict[str, Any]:
    if not isinstance(route, Mapping) or route.get("action") not in ACTIONS:
        raise ApplicationError(
            f"{where}: a route needs an action, one of {', '.join(ACTIONS)}.",
            {where: route if isinstance(route, str | int | None) else "invalid"},
        )
    action = route["action"]
    clean: dict[str, Any] = {"action": action}
    if action in ("stage", "back"):
        target = route.get("stage")
        if target not in stage_slugs:
            raise ApplicationError(
                f"{where}: there is no stage {target!r} in this project.", {where: target}
            )
        if action == "back" and stage_slugs.index(target) > stage_slugs.index(stage_slug):
            raise ApplicationError(
                f"{where}: 'back' goes to this stage or an earlier one; {target!r} comes later.",
                {where: target},
            )
        if action == "stage" and target == stage_slug:
            raise ApplicationError(
                f"{where}: to run a stage again use 'back' with max_loops.", {where: target}
            )
        clean["stage"] = target
    if action == "back":
        loops = route.get("max_loops", 1)
        if isinstance(loops, bool) or not isinstance(loops, int) or not 1 <= loops <= MAX_LOOPS:
            raise ApplicationError(
                f"{where}: max_loops must be a whole number from 1 to {MAX_LOOPS}.",
                {where: loops},
            )
        clean["max_loops"] = loops
        clean["otherwise"] = _validate_route(
            route.get("otherwise") or {"action": "discard"},
            f"{where}.otherwise",
            stage_slug=stage_slug,
            stage_slugs=stage_slugs,
        )
        if clean["otherwise"]["action"] in ("back", "revise"):
            raise ApplicationError(
                f"{where}.otherwise: after the last loop choose a final route.", {where: "loop"}
            )
    if action == "revise":
        clean["then"] = _validate_route(
            route.get("then") or {"action": "next"},
            f"{where}.then",
            stage_slug=stage_slug,
            stage_slugs=stage_slugs,
        )
        if clean["then"]["action"] == "revise":
            raise ApplicationError(f"{where}.then: one revision per decision.", {where: "revise"})
    if action == "discard" and route.get("reason"):
        clean["reason"] = str(route["reason"])[:300]
    return clean


def pipeline_edges(stages: Sequence[Stage], outcomes_of: Mapping[int, Sequence[str]]) -> list:
    """The project's pipeline as edges (from stage slug, outcome, target) where the target is a
    stage slug or one of "finish", "keep", "discard", "escalate"; ``outcomes_of`` maps a stage
    id to the outcomes its policy decides."""
    ordered = [stage for stage in stages if stage.is_active]
    edges = []
    for index, stage in enumerate(ordered):
        for outcome in outcomes_of.get(stage.pk, ("accept", "reject")):
            edges.extend(_targets(stage, outcome, route_for(stage, outcome), ordered, index))
    return edges


def _targets(stage, outcome, route, ordered, index, label=None):
    action = route["action"]
    name = label or outcome
    if action == "next":
        following = ordered[index + 1].slug if index + 1 < len(ordered) else "finish"
        return [(stage.slug, name, following)]
    if action in ("stage", "back"):
        found = [(stage.slug, name, route["stage"])]
        if action == "back":
            found += _targets(
                stage, outcome, route["otherwise"], ordered, index, f"{outcome} (last loop)"
            )
        return found
    if action == "revise":
        return _targets(stage, outcome, route["then"], ordered, index, f"{outcome} (revised)")
    return [(stage.slug, name, action)]

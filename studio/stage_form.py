"""The setup page's stage form, field by field: how a stage's policy options, tie default and
routes are shown as form fields, and how the posted fields become settings again.

Only translation lives here. Whether the settings can work is decided by the engine's one check
(``annotation.services.stage_settings_clean``, through ``studio.services.stage_edit``); a value
this module cannot read (a route target it does not know, a loop count that is not a number) is
passed on as posted so that the engine's error names it.

Routes (``annotation.routing``) are shown per outcome of the stage's policy as one *target*
select, whose values are ``""`` (not listed: the stage's default route), ``next``, ``finish``,
``keep``, ``discard``, ``escalate``, ``stage:<slug>`` and ``back:<slug>``, plus the fields a
target needs: a reason (``discard``), a loop count and what happens after the last loop
(``back``), and "revise the item first" (wraps the route in ``revise``). Field names, for the
outcome ``accept``: ``route-accept``, ``route-accept-reason``, ``route-accept-loops``,
``route-accept-otherwise``, ``route-accept-otherwise-reason``, ``route-accept-revise``.
Policy options are rows ``option-name-N`` / ``option-value-N``; a value is read as JSON when it
is JSON (``0.5``, ``true``, ``["a"]``) and as text otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from annotation.api import default_route
from annotation.eligibility import describe as describe_rules
from annotation.errors import ApplicationError
from annotation.forms import parse_bool
from annotation.policies import kind_policies
from annotation.values import loads

#: Targets that need no stage, in the order the select lists them, with their labels.
PLAIN_TARGETS = {
    "next": "The next stage",
    "finish": "Finish: accepted, done",
    "keep": "Keep, flagged as rejected",
    "discard": "Discard",
    "escalate": "Escalate to a reviewer",
}
#: Targets allowed after the last loop of a 'back' route (the engine refuses back and revise).
FINAL_TARGETS = ("next", "finish", "keep", "discard", "escalate")
#: Empty option rows shown under the stage's own options.
SPARE_OPTION_ROWS = 2

Getter = Callable[[str, str], str]


def typed_value(text: str) -> Any:
    """A value typed into the form: JSON when it reads as JSON (within the nesting limit of
    annotation.values: deeper text stays text), else the text (stripped); None for an empty
    field. What the database cannot store is refused when the stage is saved
    (annotation.inputs.check_storable)."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        return loads(text)
    except ValueError:
        return text


def shown_value(value: Any) -> str:
    """The inverse of ``typed_value`` for display: text as it is (when it would not read as
    JSON), everything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str) and typed_value(value) == value:
        return value
    return json.dumps(value, ensure_ascii=False)


def options_from_form(get: Getter, rows: int) -> dict[str, Any]:
    """``policy_options`` from the rows ``option-name-N`` / ``option-value-N`` (N < rows)."""
    options: dict[str, Any] = {}
    for number in range(rows):
        name = get(f"option-name-{number}", "").strip()
        value = get(f"option-value-{number}", "")
        if not name:
            if value.strip():
                raise ApplicationError(
                    f"Policy option row {number + 1} has a value but no name.",
                    {f"option-name-{number}": "required"},
                )
            continue
        if name in options:
            raise ApplicationError(
                f"The policy option {name!r} is given twice.", {f"option-name-{number}": name}
            )
        options[name] = typed_value(value)
    return options


def option_rows(options: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    rows = [(str(name), shown_value(value)) for name, value in (options or {}).items()]
    return rows + [("", "")] * SPARE_OPTION_ROWS


def _target_route(target: str, reason: str) -> dict[str, Any]:
    action, _, stage = target.partition(":")
    if action in ("stage", "back"):
        return {"action": action, "stage": stage}
    route: dict[str, Any] = {"action": target}
    if target == "discard" and reason.strip():
        route["reason"] = reason.strip()
    return route


def route_from_form(get: Getter, outcome: str) -> dict[str, Any] | None:
    """The route posted for ``outcome``; None when its target is the default (not listed)."""
    field = f"route-{outcome}"
    target = get(field, "").strip()
    if not target:
        return None
    route = _target_route(target, get(f"{field}-reason", ""))
    if route["action"] == "back":
        loops = get(f"{field}-loops", "1").strip() or "1"
        route["max_loops"] = int(loops) if loops.isdigit() else loops
        otherwise = get(f"{field}-otherwise", "").strip() or "discard"
        route["otherwise"] = _target_route(otherwise, get(f"{field}-otherwise-reason", ""))
    if get(f"{field}-revise", ""):
        route = {"action": "revise", "then": route}
    return route


def routes_from_form(get: Getter, outcomes: Sequence[str]) -> dict[str, Any]:
    routes = {}
    for outcome in outcomes:
        route = route_from_form(get, outcome)
        if route is not None:
            routes[outcome] = route
    return routes


def _target_of(route: Mapping[str, Any]) -> str:
    action = route.get("action", "")
    return f"{action}:{route.get('stage', '')}" if action in ("stage", "back") else str(action)


@dataclass(frozen=True)
class RouteRow:
    """One outcome's route as the form shows it."""

    outcome: str
    target: str
    reason: str
    revise: bool
    loops: int
    otherwise: str
    otherwise_reason: str
    default: str


def route_row(outcome: str, route: Mapping[str, Any] | None, default: str) -> RouteRow:
    route = dict(route or {})
    revise = route.get("action") == "revise"
    if revise:
        route = dict(route.get("then") or {"action": "next"})
    otherwise = dict(route.get("otherwise") or {"action": "discard"})
    return RouteRow(
        outcome=outcome,
        target=_target_of(route) if route else "",
        reason=str(route.get("reason", "")),
        revise=revise,
        loops=loops if isinstance(loops := route.get("max_loops", 1), int) else 1,
        otherwise=_target_of(otherwise),
        otherwise_reason=str(otherwise.get("reason", "")),
        default=default,
    )


def describe_route(route: Mapping[str, Any], stage_names: Mapping[str, str]) -> str:
    """A route in words ("the next stage", "back to Edit, at most 2 times, then discard")."""
    action = route.get("action")
    if action in PLAIN_TARGETS:
        return PLAIN_TARGETS[str(action)].lower()
    name = stage_names.get(str(route.get("stage")), str(route.get("stage")))
    if action == "stage":
        return f"the stage {name}"
    if action == "back":
        then = describe_route(route.get("otherwise") or {"action": "discard"}, stage_names)
        return f"back to {name}, at most {route.get('max_loops', 1)} times, then {then}"
    if action == "revise":
        return "revise the item, then " + describe_route(route.get("then") or {}, stage_names)
    return str(action)


def route_rows(stage: Any, outcomes: Sequence[str], stage_names: Mapping[str, str]) -> list:
    """The route rows of ``stage`` for ``outcomes`` (its policy's), from its stored routes."""
    routes = stage.routes or {}
    return [
        route_row(
            outcome, routes.get(outcome), describe_route(default_route(stage, outcome), stage_names)
        )
        for outcome in outcomes
    ]


def target_choices(stage: Any, stages: Sequence[Any]) -> dict[str, list[tuple[str, str]]]:
    """The target selects' options for ``stage`` among the project's ``stages`` (in order):
    ``all`` for a route, ``final`` for what follows the last loop. A 'back' route may only go
    to this stage or an earlier one, and 'stage' never to itself (the engine's rules; listed
    so that the form offers nothing it would refuse)."""
    ordered = list(stages)
    index = next((n for n, other in enumerate(ordered) if other.pk == stage.pk), len(ordered))
    following = next((other for other in ordered[index + 1 :] if other.is_active), None)
    plain = [
        (key, f"{label} ({following.name})" if key == "next" and following else label)
        for key, label in PLAIN_TARGETS.items()
    ]
    if following is None:
        plain[0] = ("next", "The next stage (none: finish)")
    to_stage = [
        (f"stage:{other.slug}", f"Stage: {other.name}") for other in ordered if other.pk != stage.pk
    ]
    back = [
        (f"back:{other.slug}", f"Back to {other.name}{' (again)' if other.pk == stage.pk else ''}")
        for other in ordered[: index + 1]
    ]
    return {"all": plain + to_stage + back, "final": plain + to_stage}


def field_errors(extra: Mapping[str, Any], message: str) -> dict[str, str]:
    """The form fields an ApplicationError's ``extra`` names, each with the error's message:
    ``routes.accept`` and ``routes.accept.otherwise`` → ``route-accept``, option rows and
    ``policy_options`` → ``options``, a setting's own name as it is."""
    found: dict[str, str] = {}
    for key in extra:
        key = str(key)
        if key.startswith("routes."):
            outcome = key.split(".")[1]
            found[f"route-{outcome}"] = message
        elif key.startswith("option-") or key in ("option_rows", "policy_options"):
            found["options"] = message
        else:
            found[key] = message
    return found


def stage_view(
    stage: Any,
    stages: Sequence[Any],
    *,
    kinds: Mapping[str, Any],
    policies: Mapping[str, Any],
    posted: Mapping[str, str] | None = None,
    errors: Mapping[str, str] | None = None,
    policy_override: str | None = None,
) -> dict[str, Any]:
    """What the template needs to draw one stage's form: its values (``posted`` ones when the
    form came back with an error, so nothing typed is lost), the kind's policies from the
    registry, the option rows, a route row per outcome with its error, the target choices.
    ``policy_override``: draw the routes for another policy's outcomes (the stored routes of
    the outcomes both decide are kept)."""
    errors = dict(errors or {})
    names = {other.slug: other.name for other in stages}
    kind = kinds.get(stage.kind)
    allowed = [key for key in (kind_policies(kind) if kind else ()) if key in policies]
    if stage.resolution_policy not in allowed:
        allowed.append(stage.resolution_policy)

    def get(name: str, default: str = "") -> str:
        return str(posted.get(name, default)) if posted is not None else default

    policy_key = (
        policy_override
        or get("resolution_policy", stage.resolution_policy)
        or stage.resolution_policy
    )
    policy = policies.get(policy_key)
    outcomes = policy.outcomes if policy else ("accept", "reject")
    if posted is not None:
        rows_posted = get("option-rows", "0")
        count = int(rows_posted) if rows_posted.isdigit() else 0
        options = [(get(f"option-name-{n}"), get(f"option-value-{n}")) for n in range(count)]
        routes = [
            route_row(
                outcome,
                route_from_form(get, outcome),
                describe_route(default_route(stage, outcome), names),
            )
            for outcome in outcomes
        ]
    else:
        options = option_rows(
            {
                name: value
                for name, value in (stage.policy_options or {}).items()
                if name != ADAPTIVE_OPTION
            }
        )
        routes = route_rows(stage, outcomes, names)
    view = {
        "stage": stage,
        "kind_label": kind.label if kind else stage.kind,
        "policies": [(key, policies[key].label or key) for key in allowed if key in policies],
        "policy": policy_key,
        "has_ties": bool(policy and policy.has_ties),
        "name": get("name", stage.name),
        "overlap": get("overlap", str(stage.overlap)),
        "lease_seconds": get("lease_seconds", str(stage.lease_seconds)),
        "gold_every": get("gold_every", str(stage.gold_every)),
        "is_active": parse_bool(get("is_active", "1" if stage.is_active else "0")),
        "tie_policy": get("tie_policy", stage.tie_policy),
        "tie_default": get("tie_default", shown_value(stage.tie_default)),
        "instructions": get("instructions", stage.instructions),
        "options": options,
        "routes": [(row, errors.get(f"route-{row.outcome}")) for row in routes],
        "targets": target_choices(stage, stages),
        "json": [
            (name, get(name, json.dumps(getattr(stage, name), indent=1, ensure_ascii=False)))
            for name in ("config", "phases", "eligibility")
        ],
        # The stored rules in words (the JSON below edits them): who may take an item.
        "who": describe_rules(stage.eligibility),
        "errors": errors,
        # The spot-check share, a field of its own (stored in the config).
        "spot_check_rate": get(
            "spot_check_rate", shown_value((stage.config or {}).get("spot_check_rate"))
        ),
    }
    view.update(adaptive_view(stage, get))
    return view


# --- Adaptive overlap (annotation/adaptive.py) ---------------------------------------------------

#: The policy option the form shows as a field of its own (not as an option row).
ADAPTIVE_OPTION = "confidence"


def adaptive_view(stage: Any, get: Getter) -> dict[str, Any]:
    """The adaptive overlap fields: the confidence target (empty: a fixed overlap) and the
    cap (``max_overlap``; 0 means overlap + 2)."""
    stored = (stage.policy_options or {}).get(ADAPTIVE_OPTION)
    return {
        "adaptive_confidence": get("adaptive_confidence", shown_value(stored)),
        "max_overlap": get("max_overlap", str(stage.max_overlap)),
        "effective_max_overlap": stage.effective_max_overlap,
    }

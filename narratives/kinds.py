"""The ``causal_order`` kind: rebuild a narrative's causal structure.

Item payload (narratives.services.narrative_rows): ``structure`` ("chain" | "graph"),
``sentences`` (in the file's order), ``events`` (the node names in a shuffled order fixed at
import, never the true order), and, never shown, ``gold`` (``{"order": […]}`` for a chain,
``{"nodes": […], "edges": […]}`` for a graph), ``direction``, ``source``, ``length``,
``source_file``, ``source_line``. Annotators see the allow-list ``structure``, ``sentences``,
``events`` and the derived ``cards`` (each event's humanised label) — nothing else, in pages and
the API alike.

Payload:

* chains: ``{"order": [event, …]}`` — a permutation of exactly the item's events; the form may
  post ``rank:<event>`` = 1 … n instead (the no-JavaScript fallback), turned into ``order``;
* graphs: ``{"edges": [[cause, effect], …]}`` — at least one edge, each between two of the item's
  events, no self-loop, none twice, no cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import networkx as nx

from annotation.errors import ApplicationError
from annotation.kinds import AgreementSpec, KindContext, TaskKind
from annotation.values import loads
from narratives.reader import humanise

VISIBLE_FIELDS = ("structure", "sentences", "events")


def _events(context: KindContext) -> list[str]:
    item = context.item
    events = (item.payload if item is not None else {}).get("events")
    if not events:
        raise ApplicationError("This item has no events to order.", {"item": "no events"})
    return [str(e) for e in events]


#: The hand decision of a narrative: its answers so far are recorded and scored.
AS_ANSWERED = "as answered"


def _label(node: str) -> str:
    return humanise(node)


class CausalOrderKind(TaskKind):
    key = "causal_order"
    label = "Causal narrative: order the events (chains) or draw the edges (graphs)"
    template = "narratives/order.html#form"
    display_template = "narratives/order.html#display"
    policies = ("narrative_record",)
    default_policy = "narrative_record"
    vote_field = None
    vote_fields = {"order": "order", "edges": "edges"}
    # Scored against the structure; agreement (Fleiss' κ on exact-order correctness,
    # Krippendorff's α on the orders) is on the Narratives tab.
    agreement = AgreementSpec(None)
    default_visible_fields = VISIBLE_FIELDS

    def choices(self, context: KindContext) -> list[Any] | None:
        """The one hand decision (an item page's *Resolve by hand*, a bulk resolve): finish the
        item with the answers given so far (the Narratives tab scores answers, not decisions).
        An order or a graph is not a value one types; without a choice the item page asked for
        a number, which this kind's validation then refused."""
        return [AS_ANSWERED]

    def derived_fields(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        events = [str(e) for e in payload.get("events") or []]
        return {"cards": [{"node": e, "label": _label(e)} for e in events]}

    def parse_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        getlist = getattr(data, "getlist", None)
        many = (lambda key: getlist(key)) if getlist else (lambda key: data.get(key) or [])
        ranks = {
            key.split(":", 1)[1]: (data.get(key) or "").strip()
            for key in data
            if key.startswith("rank:")
        }
        if ranks and any(ranks.values()):
            return {"ranks": ranks}
        edges = []
        for raw in many("edge"):
            try:  # within the nesting limit: the field is posted by the page, or by anyone
                edges.append(loads(raw))
            except (TypeError, ValueError):
                edges.append(raw)
        if edges or "edges_sent" in data:
            return {"edges": edges}
        return {"order": [str(v) for v in many("order")]}

    def validate(self, payload: Mapping[str, Any], context: KindContext) -> dict[str, Any]:
        events = _events(context)
        structure = context.item.payload.get("structure", "chain")
        if structure == "graph":
            return {"edges": self._edges(payload.get("edges"), events)}
        order = payload.get("order")
        if order is None and isinstance(payload.get("ranks"), Mapping):
            order = self._from_ranks(payload["ranks"], events)
        return {"order": self._order(order, events)}

    @staticmethod
    def _from_ranks(ranks: Mapping[str, Any], events: list[str]) -> list[str]:
        positions: dict[int, str] = {}
        for event in events:
            raw = str(ranks.get(event, "")).strip()
            if not raw.isdigit() or not 1 <= int(raw) <= len(events):
                raise ApplicationError(
                    f"Give {_label(event)} a position from 1 to {len(events)}.",
                    {"order": f"rank of {event}"},
                )
            if int(raw) in positions:
                raise ApplicationError(
                    f"{_label(positions[int(raw)])} and {_label(event)} are both at position "
                    f"{raw}: give every event its own position.",
                    {"order": f"position {raw} twice"},
                )
            positions[int(raw)] = event
        return [positions[p] for p in sorted(positions)]

    @staticmethod
    def _order(order: Any, events: list[str]) -> list[str]:
        if not isinstance(order, list) or not all(isinstance(e, str) for e in order):
            raise ApplicationError(
                "Send the events in your order: a list of the item's event names.",
                {"order": "a list of event names"},
            )
        unknown = sorted(set(order) - set(events))
        missing = [e for e in events if e not in order]
        repeated = sorted({e for e in order if order.count(e) > 1})
        if unknown or missing or repeated:
            parts = []
            if unknown:
                parts.append(f"not events of this item: {', '.join(unknown[:5])}")
            if missing:
                parts.append(f"missing: {', '.join(missing[:5])}")
            if repeated:
                parts.append(f"more than once: {', '.join(repeated[:5])}")
            raise ApplicationError(
                "The order must hold every event of the item exactly once ("
                + "; ".join(parts)
                + ").",
                {"order": "; ".join(parts)},
            )
        return list(order)

    @staticmethod
    def _edges(edges: Any, events: list[str]) -> list[list[str]]:
        if not isinstance(edges, list):
            raise ApplicationError(
                "Send the edges you drew: a list of [cause, effect].",
                {"edges": "a list of [cause, effect]"},
            )
        known = set(events)
        clean: list[list[str]] = []
        for index, edge in enumerate(edges):
            if not (
                isinstance(edge, list | tuple)
                and len(edge) == 2
                and all(isinstance(n, str) for n in edge)
            ):
                raise ApplicationError(
                    f"Edge {index + 1} is not [cause, effect].", {"edges": f"edges[{index}]"}
                )
            cause, effect = edge
            unknown = [n for n in (cause, effect) if n not in known]
            if unknown:
                raise ApplicationError(
                    f"Edge {index + 1} names {', '.join(unknown)}, not an event of this item.",
                    {"edges": f"edges[{index}]: unknown event"},
                )
            if cause == effect:
                raise ApplicationError(
                    f"{_label(cause)} cannot cause itself.", {"edges": f"edges[{index}]"}
                )
            if [cause, effect] in clean:
                raise ApplicationError(
                    f"The edge {_label(cause)} → {_label(effect)} is there twice.",
                    {"edges": f"edges[{index}]: repeated"},
                )
            clean.append([cause, effect])
        if not clean:
            raise ApplicationError(
                "Draw at least one edge between the events.", {"edges": "no edge"}
            )
        graph = nx.DiGraph(clean)
        if not nx.is_directed_acyclic_graph(graph):
            cycle = [u for u, _ in nx.find_cycle(graph)]
            names = " → ".join(_label(n) for n in [*cycle, cycle[0]])
            raise ApplicationError(f"Your edges make a cycle: {names}.", {"edges": "a cycle"})
        return sorted(clean)

    def shortcuts(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [
            ("j / ↓", "next event"),
            ("k / ↑", "previous event"),
            ("Shift+↓ / Shift+J", "move the event down (chains)"),
            ("Shift+↑ / Shift+K", "move the event up (chains)"),
            ("Space", "pick cause, then effect: adds or removes the edge (graphs)"),
            ("Enter", "submit"),
        ]

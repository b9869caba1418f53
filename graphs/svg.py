"""A DAG drawn server-side as SVG (Django-free): nodes placed by networkx in layers of its
topological generations (causes above effects), edges as arrows. Hand-written SVG, no script,
so the site's CSP is untouched; every label is escaped. Nodes a question names may be marked
(``highlight``): the pair asked about, and the conditioning set."""

from __future__ import annotations

from html import escape

import networkx as nx

WIDTH, LAYER_GAP, RADIUS, MARGIN = 520, 78, 19, 30


def _rx(node) -> float:
    """Nodes are ellipses wide enough for their label (13 px sans-serif)."""
    return max(RADIUS, len(str(node)) * 4.1 + 9)


def _boundary(ux: float, uy: float, rx: float) -> float:
    """Distance from an ellipse's centre to its edge in the direction (ux, uy)."""
    return 1 / ((ux / rx) ** 2 + (uy / RADIUS) ** 2) ** 0.5


def _positions(dag: nx.DiGraph) -> tuple[dict[str, tuple[float, float]], float]:
    """Node centres by layer (topological generations), and the drawing's width: wider than
    WIDTH when a layer holds more nodes than fit."""
    positions = {}
    layers = [sorted(layer, key=str) for layer in nx.topological_generations(dag)]
    widest = max((sum(2 * _rx(n) + 14 for n in layer) for layer in layers), default=0)
    width = max(WIDTH, widest + 2 * MARGIN)
    for depth, layer in enumerate(layers):
        step = (width - 2 * MARGIN) / len(layer)
        for index, node in enumerate(layer):
            positions[node] = (MARGIN + step * (index + 0.5), MARGIN + RADIUS + depth * LAYER_GAP)
    return positions, width


def dag_svg(
    edges: list[list[str]],
    nodes: list[str] | None = None,
    *,
    pair: tuple[str, ...] = (),
    given: tuple[str, ...] = (),
    title: str = "Causal graph",
) -> str:
    dag = nx.DiGraph()
    dag.add_nodes_from(nodes or [])
    dag.add_edges_from((str(u), str(v)) for u, v in edges)
    positions, width = _positions(dag)
    height = max(y for _, y in positions.values()) + RADIUS + MARGIN if positions else 2 * MARGIN
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="dag" role="img" viewBox="0 0 {width:.0f} '
        f'{height:.0f}" width="{width:.0f}" height="{height:.0f}"><title>{escape(title)}</title>',
        '<defs><marker id="dag-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#444"/></marker></defs>',
    ]
    for u, v in sorted(dag.edges, key=lambda e: (str(e[0]), str(e[1]))):
        (x1, y1), (x2, y2) = positions[u], positions[v]
        dx, dy = x2 - x1, y2 - y1
        length = max((dx * dx + dy * dy) ** 0.5, 1e-9)
        ux, uy = dx / length, dy / length
        start, end = _boundary(ux, uy, _rx(u)), _boundary(ux, uy, _rx(v)) + 2
        parts.append(
            f'<line x1="{x1 + ux * start:.1f}" y1="{y1 + uy * start:.1f}" '
            f'x2="{x2 - ux * end:.1f}" y2="{y2 - uy * end:.1f}" '
            f'stroke="#444" stroke-width="1.6" marker-end="url(#dag-arrow)">'
            f"<title>{escape(str(u))} → {escape(str(v))}</title></line>"
        )
    for node, (x, y) in sorted(positions.items(), key=lambda p: str(p[0])):
        role = "pair" if node in pair else "given" if node in given else "plain"
        fill = {"pair": "#ffe08a", "given": "#b9d7f7", "plain": "#fff"}[role]
        parts.append(
            f'<g class="dag-node dag-{role}" data-node="{escape(str(node))}">'
            f'<ellipse cx="{x:.1f}" cy="{y:.1f}" rx="{_rx(node):.1f}" ry="{RADIUS}" fill="{fill}" '
            'stroke="#222" '
            f'stroke-width="{2.4 if role != "plain" else 1.4}"/>'
            f'<text x="{x:.1f}" y="{y + 4.5:.1f}" text-anchor="middle" font-size="13" '
            f'font-family="sans-serif">{escape(str(node))}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)

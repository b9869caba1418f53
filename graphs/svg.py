"""A DAG drawn server-side as SVG (Django-free): nodes placed by networkx in layers of its
topological generations (causes above effects), edges as arrows. Hand-written SVG, no script,
so the site's CSP is untouched; every label is escaped. Nodes a question names may be marked
(``highlight``): the pair asked about, and the conditioning set."""

from __future__ import annotations

from html import escape

import networkx as nx

WIDTH, LAYER_GAP, RADIUS, MARGIN = 520, 78, 19, 30


def _positions(dag: nx.DiGraph) -> dict[str, tuple[float, float]]:
    positions = {}
    layers = [sorted(layer, key=str) for layer in nx.topological_generations(dag)]
    for depth, layer in enumerate(layers):
        step = (WIDTH - 2 * MARGIN) / len(layer)
        for index, node in enumerate(layer):
            positions[node] = (MARGIN + step * (index + 0.5), MARGIN + RADIUS + depth * LAYER_GAP)
    return positions


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
    positions = _positions(dag)
    height = max(y for _, y in positions.values()) + RADIUS + MARGIN if positions else 2 * MARGIN
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="dag" role="img" viewBox="0 0 {WIDTH} '
        f'{height:.0f}" width="{WIDTH}" height="{height:.0f}"><title>{escape(title)}</title>',
        '<defs><marker id="dag-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#444"/></marker></defs>',
    ]
    for u, v in sorted(dag.edges, key=lambda e: (str(e[0]), str(e[1]))):
        (x1, y1), (x2, y2) = positions[u], positions[v]
        dx, dy = x2 - x1, y2 - y1
        length = max((dx * dx + dy * dy) ** 0.5, 1e-9)
        ox, oy = dx / length * RADIUS, dy / length * (RADIUS + 2)
        parts.append(
            f'<line x1="{x1 + ox:.1f}" y1="{y1 + oy:.1f}" x2="{x2 - ox:.1f}" y2="{y2 - oy:.1f}" '
            f'stroke="#444" stroke-width="1.6" marker-end="url(#dag-arrow)">'
            f"<title>{escape(str(u))} → {escape(str(v))}</title></line>"
        )
    for node, (x, y) in sorted(positions.items(), key=lambda p: str(p[0])):
        role = "pair" if node in pair else "given" if node in given else "plain"
        fill = {"pair": "#ffe08a", "given": "#b9d7f7", "plain": "#fff"}[role]
        parts.append(
            f'<g class="dag-node dag-{role}" data-node="{escape(str(node))}">'
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{RADIUS}" fill="{fill}" stroke="#222" '
            f'stroke-width="{2.4 if role != "plain" else 1.4}"/>'
            f'<text x="{x:.1f}" y="{y + 4.5:.1f}" text-anchor="middle" font-size="13" '
            f'font-family="sans-serif">{escape(str(node))}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)

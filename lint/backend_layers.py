"""Draws backend/ as layers: its packages and root modules, each above everything it imports.

    .venv/bin/python lint/backend_layers.py            # the layers, the cycles, the upward imports
    .venv/bin/python lint/backend_layers.py --check    # exit 1 on a cycle or more than MAX_UPWARD upward

The nodes are backend's top-level packages (``auth``, ``runs``, ``http``, ...) and root modules (``errors``,
``db``, ``models``, ``settings``, ``main``, ...); ``backend/__init__.py`` itself is none. An edge ``a -> b``
says that some module of ``a`` imports some module of ``b``, read by grimp (import-linter's graph) from
every import statement, those inside functions included; imports under ``if TYPE_CHECKING:`` are left out
(they never run: a type may name a higher layer's class).

The graph is condensed to its strongly connected components. A component of more than one node is a
cycle: its nodes import each other, whichever order they are drawn in. The drawing puts every other node
above all it imports (its layer: one more than the highest layer it imports; the floor is 0), so no
import runs upward but inside a cycle; there, the nodes are drawn in the order that leaves the fewest
dependencies pointing up (a minimum feedback arc set over the cycle's node pairs), and those are the
upward imports counted: the ones to undo to break the cycle. Each is shown with the module imports it
is made of.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import grimp

REPO = Path(__file__).resolve().parent.parent
PACKAGE = "backend"
MAX_UPWARD = 1  # what --check (and tests/test_layers.py) allows; and no cycle
EXACT_UP_TO = 16  # nodes in a cycle ordered exactly (2^n subsets); a larger one greedily


@dataclass
class Layers:
    nodes: set[str]
    # (importer node, imported node) -> the module imports behind it: (importer, imported, line)
    edges: dict[tuple[str, str], list[tuple[str, str, int]]]
    cycles: list[list[str]] = field(default_factory=list)
    level: dict[str, int] = field(default_factory=dict)  # 0: the floor
    rank: dict[str, int] = field(default_factory=dict)  # a cycle's nodes on their shared level, top first
    upward: list[tuple[str, str]] = field(default_factory=list)


def node_of(module: str) -> str | None:
    """``backend.runs.service`` -> ``runs``, ``backend.errors`` -> ``errors``; None for ``backend`` itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == PACKAGE else None


def read_graph(root: Path = REPO) -> Layers:
    """The node graph of ``root``'s backend package, from every import but the TYPE_CHECKING ones."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    graph = grimp.build_graph(PACKAGE, exclude_type_checking_imports=True, cache_dir=None)
    nodes: set[str] = set()
    edges: dict[tuple[str, str], list[tuple[str, str, int]]] = defaultdict(list)
    for module in sorted(graph.modules):
        source = node_of(module)
        if source is None:
            continue
        nodes.add(source)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            target = node_of(imported)
            if target is None or target == source:
                continue
            for detail in graph.get_import_details(importer=module, imported=imported):
                edges[(source, target)].append((module, imported, detail["line_number"]))
    return Layers(nodes=nodes, edges=dict(edges))


def components(nodes: Iterable[str], edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan's, iterative), each sorted, every component after the ones it
    imports."""
    adjacent: dict[str, list[str]] = defaultdict(list)
    for a, b in sorted(edges):
        adjacent[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(adjacent[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, targets = work[-1]
            for w in targets:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(adjacent[w])))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component: list[str] = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    found.append(sorted(component))
    return found


def fewest_upward(cycle: list[str], pairs: set[tuple[str, str]]) -> list[str]:
    """The cycle's nodes top first, in an order that leaves the fewest ``pairs`` pointing up (from a lower
    node to a higher one): exact for up to EXACT_UP_TO nodes, else Eades, Lin and Smyth's greedy order."""
    n = len(cycle)
    into: dict[int, list[int]] = defaultdict(list)  # imported -> its importers, as indexes into cycle
    position = {v: i for i, v in enumerate(cycle)}
    for a, b in pairs:
        if a in position and b in position:
            into[position[b]].append(position[a])
    if n <= EXACT_UP_TO:
        # best[s]: the fewest upward pairs among the nodes of s, drawn as the bottom of the picture
        best = [0] + [n * n] * ((1 << n) - 1)
        top: list[int] = [-1] * (1 << n)
        for placed in range(1 << n):
            for v in range(n):
                if placed >> v & 1:
                    continue
                cost = best[placed] + sum(1 for a in into[v] if placed >> a & 1)
                grown = placed | 1 << v
                if cost < best[grown]:
                    best[grown], top[grown] = cost, v
        order: list[str] = []
        placed = (1 << n) - 1
        while placed:
            order.append(cycle[top[placed]])
            placed &= ~(1 << top[placed])
        return order
    left = set(cycle)
    head: list[str] = []
    tail: list[str] = []
    while left:
        out = {v: sum(1 for a, b in pairs if a == v and b in left) for v in left}
        inn = {v: sum(1 for a, b in pairs if b == v and a in left) for v in left}
        sources = sorted(v for v in left if inn[v] == 0)
        sinks = sorted(v for v in left if out[v] == 0)
        chosen = (
            sources[0] if sources else sinks[0] if sinks else max(sorted(left), key=lambda v: out[v] - inn[v])
        )
        if not sources and sinks:
            tail.insert(0, chosen)
        else:
            head.append(chosen)
        left.discard(chosen)
    return head + tail


def draw(layers: Layers) -> Layers:
    """Cycles, each node's layer and the upward imports (see the module's docstring)."""
    pairs = set(layers.edges)
    found = components(layers.nodes, pairs)
    layers.cycles = [c for c in found if len(c) > 1]
    of = {v: i for i, c in enumerate(found) for v in c}
    level: dict[int, int] = {}
    for i, component in enumerate(found):  # Tarjan's order: what a component imports comes first
        below = [level[of[b]] for a, b in pairs if a in component and of[b] != i]
        level[i] = max(below, default=-1) + 1
    layers.level = {v: level[of[v]] for v in layers.nodes}
    for component in layers.cycles:
        order = fewest_upward(component, pairs)
        layers.rank |= {v: r for r, v in enumerate(order)}
        layers.upward += sorted(
            (a, b) for a, b in pairs if a in component and b in component and order.index(a) > order.index(b)
        )
    return layers


def report(layers: Layers) -> str:
    lines = [f"backend/ as layers (top first; {len(layers.nodes)} nodes, {len(layers.edges)} dependencies):"]
    in_cycle = {v for c in layers.cycles for v in c}
    for level in sorted(set(layers.level.values()), reverse=True):
        names = sorted(
            (v for v, n in layers.level.items() if n == level), key=lambda v: (layers.rank.get(v, 0), v)
        )
        lines.append(f"  {level:2d}  " + "  ".join(f"{v}*" if v in in_cycle else v for v in names))
    if in_cycle:
        lines.append("  (* in a cycle, drawn in the order that leaves the fewest imports pointing up)")
    lines.append(f"cycles: {len(layers.cycles)}")
    for cycle in layers.cycles:
        lines.append("  " + " <-> ".join(cycle))
    lines.append(f"upward imports: {len(layers.upward)}")
    for a, b in layers.upward:
        lines.append(f"  {a} -> {b}")
        for importer, imported, line in layers.edges[(a, b)]:
            lines.append(f"      {importer}:{line} imports {imported}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--root", type=Path, default=REPO, help="the tree holding backend/ (default: this one)"
    )
    parser.add_argument("--check", action="store_true", help=f"exit 1 on a cycle or over {MAX_UPWARD} upward")
    args = parser.parse_args(argv)
    layers = draw(read_graph(args.root.resolve()))
    print(report(layers))
    if args.check and (layers.cycles or len(layers.upward) > MAX_UPWARD):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The cycle search of ``tools/check_layers.py``: one cycle through each group of modules
that import one another.

``check_layers`` gives it the import edges inside each package: module-level imports (with
what they load) and ``TYPE_CHECKING`` imports alike. A type-only import never runs, but a
cycle through one is still two modules that each need the other to be read (a checker, a
reader, a refactoring sees them as one), so it fails like any other; a lazy import inside
a function is not an edge (it is how a cycle is broken). Standard library only.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Set


def cycles(edges: Mapping[str, Set[str]]) -> list[list[str]]:
    """One shortest cycle through each group of modules that import one another, each
    starting at the group's first module by name, the groups in order."""
    reach = {v: _reachable(v, edges) for v in edges}
    groups = {frozenset(w for w in reach[v] if v in reach[w]) for v in edges if v in reach[v]}
    return [_a_cycle(sorted(group), edges) for group in sorted(groups, key=sorted)]


def _reachable(start: str, edges: Mapping[str, Set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = list(edges[start])
    while todo:
        v = todo.pop()
        if v not in seen:
            seen.add(v)
            todo.extend(edges.get(v, ()))
    return seen


def _a_cycle(component: list[str], edges: Mapping[str, Set[str]]) -> list[str]:
    """A shortest cycle through the first module of ``component``."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(set(edges.get(v, ())) & members):
            if w == start:
                return paths[v]
            if w not in paths:
                paths[w] = [*paths[v], w]
                queue.append(w)
    return component

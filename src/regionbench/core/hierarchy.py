"""The label hierarchy: a tree of labels rooted at ``entity`` (paper §3.2; docs/vocabulary.md).

Depth counts edges from the root, so ``entity`` has depth 0 and a first-level branch such as
``food`` depth 1.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

import numpy as np
import yaml

from regionbench.core import yamlfile
from regionbench.core.errors import InputError

RELATIONS = ("is-a", "part-of", "kind-of")
DIRECTIONS = ("any", "specific", "general")


class HierarchyError(InputError):
    """A hierarchy definition that cannot form a tree; the message says where and how to fix."""


@dataclass(frozen=True)
class Node:
    name: str
    parent: str | None
    relation: str = "is-a"
    group: bool = False


@dataclass(frozen=True)
class Conflict:
    """A node seen under several parents in the source; ``chosen`` is the majority parent."""

    node: str
    parents: dict[str, int]
    chosen: str


@dataclass
class Hierarchy:
    root: str
    nodes: dict[str, Node]
    conflicts: list[Conflict] = field(default_factory=list)
    notes: dict[str, int] = field(default_factory=dict)  # what an import met: counts by kind
    counts: dict[str, int] = field(default_factory=dict)  # annotations per node, where known
    children: dict[str, list[str]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.children = {name: [] for name in self.nodes}
        for node in self.nodes.values():
            if node.parent is not None:
                self.children[node.parent].append(node.name)
        self._check_acyclic()
        self._index = {name: i for i, name in enumerate(self.nodes)}
        self._depths = np.array([self.depth(n) for n in self.nodes], dtype=np.int64)
        # above[i, j]: node i is a proper ancestor of node j.
        self._above = np.zeros((len(self.nodes), len(self.nodes)), dtype=bool)
        for name, j in self._index.items():
            for ancestor in self.ancestors(name):
                self._above[self._index[ancestor], j] = True

    @classmethod
    def from_yaml(cls, path: str | Path) -> Hierarchy:
        """Read ``hierarchy.yaml``: ``root`` and a list of ``{name, parent, relation?, group?}``."""
        path = Path(path)
        data = yamlfile.read(path, HierarchyError, "hierarchy")
        if not isinstance(data, dict) or "root" not in data or "nodes" not in data:
            raise HierarchyError(f"{path}: expected keys 'root' and 'nodes'")
        root = str(data["root"])
        nodes = {root: Node(root, None)}
        for i, item in enumerate(data["nodes"], start=1):
            where = f"{path}: node {i}"
            name, parent = str(item.get("name", "")), item.get("parent")
            if not name or parent is None:
                raise HierarchyError(f"{where}: every node needs 'name' and 'parent'")
            if name in nodes:
                raise HierarchyError(f"{where}: duplicate name {name!r}; keep one entry per label")
            relation = item.get("relation", "is-a")
            if relation not in RELATIONS:
                raise HierarchyError(f"{where}: relation {relation!r} of {name!r} is not one of {', '.join(RELATIONS)}")
            nodes[name] = Node(name, str(parent), relation, bool(item.get("group", False)))
        for node in nodes.values():
            if node.parent is not None and node.parent not in nodes:
                raise HierarchyError(
                    f"{path}: {node.name!r} names unknown parent {node.parent!r}; add it or fix the name"
                )
        return cls(root, nodes)

    def _check_acyclic(self) -> None:
        for name in self.nodes:
            seen = {name}
            current = self.nodes[name].parent
            while current is not None:
                if current in seen:
                    raise HierarchyError(f"cycle through {name!r}; every chain of parents must reach {self.root!r}")
                seen.add(current)
                current = self.nodes[current].parent

    @property
    def labels(self) -> list[str]:
        """Every node but the root, in definition order."""
        return [n for n in self.nodes if n != self.root]

    def parent(self, label: str) -> str | None:
        return self.nodes[label].parent

    def ancestors(self, label: str) -> list[str]:
        """Ancestors from the parent up to the root."""
        out = []
        current = self.nodes[label].parent
        while current is not None:
            out.append(current)
            current = self.nodes[current].parent
        return out

    def depth(self, label: str) -> int:
        return len(self.ancestors(label))

    def path(self, label: str) -> list[str]:
        """Labels from the root down to ``label``."""
        return [*reversed(self.ancestors(label)), label]

    def branch(self, label: str) -> str:
        """First-level node above (or equal to) ``label``."""
        path = self.path(label)
        return path[1] if len(path) > 1 else path[0]

    def is_leaf(self, label: str) -> bool:
        return not self.children[label]

    def is_ancestor(self, ancestor: str, label: str) -> bool:
        return ancestor in self.ancestors(label)

    def descendants(self, label: str) -> list[str]:
        """Every node below ``label``, depth first."""
        out = []
        for child in self.children[label]:
            out += [child, *self.descendants(child)]
        return out

    # -- e_hierarchy (paper eq. 1; docs/vocabulary.md) ---------------------------------------------------

    def indices(self, labels: Iterable[str]) -> np.ndarray:
        """Node indices of ``labels``; unknown labels raise one line naming them."""
        labels = list(labels)
        try:
            return np.array([self._index[x] for x in labels], dtype=np.int64)
        except KeyError:
            unknown = sorted({x for x in labels if x not in self._index})
            raise HierarchyError(
                f"labels not in the hierarchy: {', '.join(map(repr, unknown[:10]))}; check spelling or the vocabulary"
            ) from None

    @overload
    def e_hierarchy(  # type: ignore[overload-overlap]  # a str is an Iterable[str] too
        self, true: str, pred: str, direction: str = "any", threshold: float | None = None
    ) -> float: ...

    @overload
    def e_hierarchy(
        self, true: Iterable[str], pred: Iterable[str], direction: str = "any", threshold: float | None = None
    ) -> np.ndarray: ...

    def e_hierarchy(
        self,
        true: str | Iterable[str],
        pred: str | Iterable[str],
        direction: str = "any",
        threshold: float | None = None,
    ) -> float | np.ndarray:
        """Hierarchical error of predicting ``pred`` for ``true`` (scalars or equal-length arrays).

        e(t, p) = 0 if t == p; |d(t) - d(p)| / max(d(t), d(p)) if one is an ancestor of the
        other; 1 otherwise. ``direction`` "specific" credits only predictions below t, "general"
        only predictions above t. With ``threshold`` tau, an error above tau counts as 1.
        A prediction is soft-correct when e < 1.
        """
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}, not {direction!r}")
        scalar = isinstance(true, str) and isinstance(pred, str)
        t = self.indices([true] if isinstance(true, str) else true)
        p = self.indices([pred] if isinstance(pred, str) else pred)
        if t.shape != p.shape:
            raise ValueError(f"true and pred differ in length ({t.size} vs {p.size})")
        dt, dp = self._depths[t], self._depths[p]
        related = np.zeros(t.shape, dtype=bool)
        if direction in ("any", "specific"):
            related |= self._above[t, p]  # p lies below t
        if direction in ("any", "general"):
            related |= self._above[p, t]  # p lies above t
        with np.errstate(invalid="ignore", divide="ignore"):
            partial = np.abs(dt - dp) / np.maximum(np.maximum(dt, dp), 1)
        e = np.where(t == p, 0.0, np.where(related, partial, 1.0))
        if threshold is not None:
            e = np.where(e > threshold, 1.0, e)
        return float(e[0]) if scalar else e

    @classmethod
    def from_nodes(cls, root: str, nodes: dict[str, Node], **extra: Any) -> Hierarchy:
        """A hierarchy from nodes in any order (they are put parents first); ``extra`` are the
        optional fields (``conflicts``, ``notes``, ``counts``)."""
        return cls(root, _parents_first(nodes, root), **extra)

    def write_yaml(self, path: str | Path, comment: str) -> None:
        """Write the tree as ``hierarchy.yaml`` (``from_yaml`` reads it back), parents first,
        under ``comment`` (one ``#`` line each); relation and group only where not the default."""
        nodes = []
        for node in self.nodes.values():
            if node.parent is None:
                continue
            item: dict[str, Any] = {"name": node.name, "parent": node.parent}
            if node.relation != "is-a":
                item["relation"] = node.relation
            if node.group:
                item["group"] = True
            nodes.append(item)
        head = "".join(f"# {line}\n" for line in comment.splitlines())
        body = yaml.safe_dump({"root": self.root, "nodes": nodes}, sort_keys=False, allow_unicode=True)
        Path(path).write_text(head + body, encoding="utf-8")

    def render(self) -> str:
        """The tree as indented text: name, depth, count where known, flags and conflicts."""
        chosen = {c.node: c for c in self.conflicts}
        lines = []

        def walk(name: str, indent: int) -> None:
            node = self.nodes[name]
            extra = [f"depth {indent}"]
            if name in self.counts:
                extra.append(f"{self.counts[name]} regions")
            if node.group:
                extra.append("group")
            if node.relation != "is-a":
                extra.append(node.relation)
            if name in chosen:
                others = ", ".join(f"{p} x{n}" for p, n in chosen[name].parents.items())
                extra.append(f"CONFLICT: parents {others}; using {chosen[name].chosen}")
            lines.append(f"{'  ' * indent}{name}  ({'; '.join(extra)})")
            for child in self.children[name]:
                walk(child, indent + 1)

        walk(self.root, 0)
        for kind, n in self.notes.items():
            lines.append(f"# {kind}: {n}")
        return "\n".join(lines)


def _parents_first(nodes: dict[str, Node], root: str) -> dict[str, Node]:
    """Order nodes so each comes after its parent (depth first, children by name)."""
    children: dict[str, list[str]] = defaultdict(list)
    for node in nodes.values():
        if node.parent is not None:
            children[node.parent].append(node.name)
    out: dict[str, Node] = {}
    stack = [root]
    while stack:
        name = stack.pop()
        out[name] = nodes[name]
        stack.extend(sorted(children[name], reverse=True))
    if len(out) != len(nodes):
        missing = sorted(set(nodes) - set(out))
        raise HierarchyError(
            f"nodes not connected to {root!r}: {', '.join(missing[:10])}; a chain of parents forms a cycle"
        )
    return out


def majority_parent(seen: Mapping[str, int]) -> str:
    """The parent a node was seen under most often in ``seen`` (parent -> count; ties: first by
    name): the parent a node seen under several takes."""
    return min(seen, key=lambda p: (-seen[p], p))

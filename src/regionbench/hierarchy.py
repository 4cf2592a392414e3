"""The label hierarchy: a tree of labels rooted at ``entity`` (paper §3.2, SPEC §3).

Depth counts edges from the root, so ``entity`` has depth 0 and a first-level branch such as
``food`` depth 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

RELATIONS = ("is-a", "part-of", "kind-of")


class HierarchyError(ValueError):
    """A hierarchy definition that cannot form a tree; the message says where and how to fix."""


@dataclass(frozen=True)
class Node:
    name: str
    parent: str | None
    relation: str = "is-a"
    group: bool = False


@dataclass
class Hierarchy:
    root: str
    nodes: dict[str, Node]
    children: dict[str, list[str]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.children = {name: [] for name in self.nodes}
        for node in self.nodes.values():
            if node.parent is not None:
                self.children[node.parent].append(node.name)
        self._check_acyclic()

    @classmethod
    def from_yaml(cls, path: str | Path) -> Hierarchy:
        """Read ``hierarchy.yaml``: ``root`` and a list of ``{name, parent, relation?, group?}``."""
        path = Path(path)
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
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

"""The label hierarchy of a SAIAPR TC-12 tree, rebuilt from its ``ontology_path.txt`` files.

Ingest reads the same files through the same parser (``text.ontology_rows``); this module turns
the paths into a ``Hierarchy`` (docs/vocabulary.md, "Importing the official hierarchy").
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from regionbench.core.hierarchy import Conflict, Hierarchy, HierarchyError, Node, majority_parent
from regionbench.io.saiapr import text


def hierarchy_from_saiapr(root: str | Path) -> Hierarchy:
    """Rebuild the tree from ``wlist.txt`` and every ``NN/ontology_path.txt`` under ``root``.

    Paths are normalised (the empty segment of ``->->``, ``_`` prefixes kept as the group flag,
    trailing spaces). A node seen under several parents takes the majority parent and is listed
    in ``conflicts``; bare ``entity->`` rows are counted in ``notes``. Only the text files are
    read, so a root without images or masks works.
    """
    root = Path(root)
    words = set(text.read_wordlist(root / "wlist.txt").values())
    seen: dict[str, Counter[Any]] = defaultdict(Counter)  # child -> parent -> rows
    group: set[str] = set()
    notes: Counter[Any] = Counter()
    counts: Counter[Any] = Counter()
    top = "entity"
    for path in sorted(root.glob("*/ontology_path.txt")):
        lines, trailing, _ = text.official_lines(path)
        notes["blank_or_malformed_rows"] += trailing
        for row in text.ontology_rows(lines):
            if row is None:
                notes["blank_or_malformed_rows"] += 1
                continue
            entry = row[2]
            notes.update(entry.quirks)
            notes["rows"] += 1
            top = entry.nodes[0]
            if "bare_entity_path" not in entry.quirks:
                counts[entry.nodes[-1]] += 1
            group |= entry.groups
            for parent, child in itertools.pairwise(entry.nodes):
                seen[child][parent] += 1
    if not seen:
        raise HierarchyError(f"{root}: no ontology_path.txt rows found under <root>/NN/; is this a SAIAPR root?")
    nodes = {top: Node(top, None)}
    conflicts = []
    for child in sorted(seen):
        chosen = majority_parent(seen[child])
        if len(seen[child]) > 1:
            conflicts.append(Conflict(child, dict(sorted(seen[child].items())), chosen))
        nodes[child] = Node(child, chosen, group=child in group)
    notes["words_without_path"] = len(words - set(nodes) - {"n.a."})
    return Hierarchy.from_nodes(top, nodes, conflicts=conflicts, notes=dict(sorted(notes.items())), counts=dict(counts))

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
from regionbench.io.layouts import TreeVocabulary
from regionbench.io.saiapr import text

NO_LABEL = "n.a."  # the word list's id for no annotation
ROOT = "entity"  # the root of a tree without ontology_path.txt


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
    notes["words_without_path"] = len(words - set(nodes) - {NO_LABEL})
    return Hierarchy.from_nodes(top, nodes, conflicts=conflicts, notes=dict(sorted(notes.items())), counts=dict(counts))


def used_word_ids(root: str | Path) -> set[int]:
    """The word ids the tree's ``NN/labels.txt`` rows use (rows ingest cannot read are skipped:
    ingest rejects them, naming them)."""
    used = set()
    for path in sorted(Path(root).glob("*/labels.txt")):
        for line in text.official_lines(path)[0]:
            parts = line.split()
            if len(parts) == 3 and parts[2].isascii() and parts[2].isdigit():
                used.add(int(parts[2]))
    return used


def write_vocabulary(root: str | Path, out: str | Path) -> TreeVocabulary:
    """Write the tree's own ``hierarchy.yaml`` under ``out`` (``hierarchy_from_saiapr``), every word
    of ``wlist.txt`` that ``labels.txt`` uses but no path places filed under the root, and an
    empty ``category_names.tsv`` (the words are labels as they stand). The ids are
    ``wlist.txt``'s; a word neither placed nor used, and ``n.a.`` (no annotation), keeps its id
    reserved but is no label.

    Returns the labels, their ids and the counts of labels, words placed under the root and
    nodes seen under several parents (each takes its majority parent)."""
    root = Path(root)
    words = text.read_wordlist(root / "wlist.txt")
    has_paths = any(root.glob("*/ontology_path.txt"))
    tree = hierarchy_from_saiapr(root) if has_paths else Hierarchy(ROOT, {ROOT: Node(ROOT, None)})
    used = {words[i] for i in used_word_ids(root) if i in words}
    unplaced = sorted(used - set(tree.nodes) - {NO_LABEL})
    nodes = dict(tree.nodes) | {word: Node(word, tree.root) for word in unplaced}
    full = Hierarchy.from_nodes(tree.root, nodes)
    out = Path(out)
    full.write_yaml(
        out / "hierarchy.yaml",
        "Built from the tree's ontology_path.txt files; a word labels.txt uses that no path places\n"
        "is filed under the root. A node seen under several parents takes the most frequent.",
    )
    (out / "category_names.tsv").write_text("name\tlabel\n", encoding="utf-8")
    counts = {"labels": len(full.labels), "unplaced": len(unplaced), "conflicts": len(tree.conflicts)}
    return TreeVocabulary(full.labels, counts, {word: i for i, word in words.items()})

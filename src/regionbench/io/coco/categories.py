"""A vocabulary and hierarchy taken from the COCO categories of a new benchmark: each category
under its ``supercategory``, every supercategory under ``entity``, ids registered as usual
(docs/vocabulary.md, "A vocabulary from COCO categories")."""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

from regionbench.core.hierarchy import Hierarchy, Node
from regionbench.io.coco import attribution
from regionbench.io.coco.ingest import SEGMENT, category_label, mapped_label, sources
from regionbench.io.coco.split import check_file, is_id, streamed_annotations, top_level, uncategorised
from regionbench.io.layouts import Reading, TreeVocabulary
from regionbench.io.shards import IngestError

ROOT = "entity"


Files = dict[Path, dict[str, Any]]  # each annotator's file: its categories, and whether an annotation has none


def _read(root: str | Path) -> Files:
    """Each annotator file's ``categories`` list and whether any annotation is ``uncategorised``,
    the annotations streamed (a file is never held whole)."""
    files = {}
    for path in (source.path for source in sources(root)):
        _, listed = check_file(path)
        unlabelled = any(isinstance(a, dict) and uncategorised(a) for a in streamed_annotations(path))
        files[path] = {"categories": listed, "uncategorised": unlabelled}
    return files


def category_names(root: str | Path, files: Files | None = None) -> dict[str, str]:
    """Every category and supercategory name of the tree's files (``files``, when already read)
    that is not a label as it stands -> the label it maps to (``ingest.category_label``, the rule
    ingest applies too)."""
    names = set()
    for data in (files or _read(root)).values():
        for category in data["categories"]:
            if isinstance(category, dict):
                names |= {v for k in ("name", "supercategory") if isinstance(v := category.get(k), str)} - {""}
    return {name: category_label(name) for name in sorted(names) if category_label(name) != name}


def categories(root: str | Path, files: Files | None = None) -> dict[str, str | None]:
    """Label -> the label of its supercategory (``None`` when empty), the names mapped by
    ``ingest.category_label``, over every annotator's file (``files``, when already read); a
    category filed under different supercategories takes the most frequent (ties by name).
    Annotations without a category make the label ``ingest.SEGMENT``, under no supercategory."""
    seen: dict[str, Counter[Any]] = {}
    for path, data in (files or _read(root)).items():
        if data["uncategorised"]:
            seen.setdefault(SEGMENT, Counter())[None] += 1
        for category in data["categories"]:
            if not isinstance(category, dict):
                continue  # ingest rejects what it cannot read, naming it
            name = category.get("name")
            if not isinstance(name, str) or not category_label(name):
                raise IngestError(f"{path}: category name {name!r} has no letter or digit; rename the category")
            parent = category.get("supercategory")
            parent = category_label(parent) if isinstance(parent, str) and parent else None
            seen.setdefault(category_label(name), Counter())[parent] += 1
    return {name: min(c, key=lambda p: (-c[p], p or "")) for name, c in sorted(seen.items())}


def hierarchy_of(found: dict[str, str | None]) -> Hierarchy:
    """The hierarchy of categories ``found`` (label -> its supercategory's label, or None): every
    supercategory under ``entity``, each category under its supercategory (a category named as a
    supercategory is that node)."""
    supers = sorted({p for p in found.values() if p} - {ROOT})
    nodes = {ROOT: Node(ROOT, None)} | {s: Node(s, ROOT) for s in supers}
    nodes |= {c: Node(c, p or ROOT) for c, p in found.items() if c not in supers and c != ROOT}
    return Hierarchy(ROOT, nodes)


def write_vocabulary(root: str | Path, out: str | Path) -> TreeVocabulary:
    """Write ``hierarchy.yaml`` (each category under its supercategory, under ``entity``) and
    ``category_names.tsv`` (name, label: every category name that is not a label as it stands,
    ``category_names``; only the header when there is none) under ``out``; the lists, curation and
    ids are ``vocabulary.derive``'s.

    Returns the labels, and the counts of labels, supercategories and renamed names."""
    files = _read(root)  # each file once, for the hierarchy and for the renamed names
    found = categories(root, files)
    if not found:
        raise IngestError(f"{root}/annotations: no categories, and no annotation without one, in any COCO file")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tree = hierarchy_of(found)
    supers = [s for s in tree.labels if s in set(found.values())]
    tree.write_yaml(
        out / "hierarchy.yaml", "Built from the COCO categories: each category under its supercategory, under entity."
    )
    renamed = category_names(root, files)
    rows = "".join(f"{name}\t{label}\n" for name, label in renamed.items())
    (out / "category_names.tsv").write_text("name\tlabel\n" + rows, encoding="utf-8")
    counts = {"labels": len(tree.labels), "supercategories": len(supers), "renamed": len(renamed)}
    return TreeVocabulary(tree.labels, counts)


FREQUENCIES = ("r", "c", "f")  # LVIS's frequency groups: rare, common, frequent


def source_categories(root: str | Path, reading: Reading) -> list[dict[str, Any]]:
    """Each annotator file's categories as it lists them (id, name, supercategory; LVIS's frequency
    and synonyms) with the label each maps to (``ingest.mapped_label``; None when no vocabulary
    label): what an export writes back. An entry without an integer id and a string name is left out (ingest reports it)."""
    rows = []
    seen = set()  # an annotator's split files list one set of categories: each once
    for source in sources(root):
        annotator = source.annotator
        _, listed = check_file(source.path)
        for category in listed:
            if (
                not isinstance(category, dict)
                or not is_id(category.get("id"))
                or not isinstance(category.get("name"), str)
                or (annotator, category["id"]) in seen
            ):
                continue
            seen.add((annotator, category["id"]))
            parent, synonyms = category.get("supercategory"), category.get("synonyms")
            label = mapped_label(category["name"], reading.words, reading.category_map)
            rows.append(
                {
                    "annotator": annotator,
                    "category_id": category["id"],
                    "name": category["name"],
                    "supercategory": parent if isinstance(parent, str) else None,
                    "label": label if label in reading.words else None,
                    # LVIS's: how often the category is seen (r, c, f), its other names
                    "frequency": category.get("frequency") if category.get("frequency") in FREQUENCIES else None,
                    "synonyms": synonyms
                    if isinstance(synonyms, list) and all(isinstance(w, str) for w in synonyms)
                    else None,
                }
            )
    return rows


def describe_source(root: str | Path) -> dict[str, str | None]:
    """What the tree's COCO files state of their collection (``attribution.stated_source`` of
    each file's ``info``, ``licenses`` and ``images``)."""
    return attribution.stated_source(
        (_stated(path, "info"), _stated(path, "licenses"), check_file(path)[0])
        for path in (source.path for source in sources(root))
    )


@cache
def _stated(path: Path, key: str) -> object:
    """A file's top-level ``info`` or ``licenses`` value (``split.top_level``): small values, each
    file streamed once a process for both what the source states and its files' own record."""
    return top_level(path, key)


def source_files(root: str | Path) -> list[dict[str, Any]]:
    """Each instances file of the tree as the release keeps it for exports to write back: its
    annotator, its path below the tree (``file``), the split it holds (None in an export's
    tree), the folder its images' file names are below (``images/``; COCO's own tree: the
    split's; None: LVIS's, which names images by ``coco_url``) and its top-level ``info`` and ``licenses`` as
    given (None where the file has none), in the files' order."""
    return [
        {
            "annotator": source.annotator,
            "file": source.shown,
            "split": source.split,
            "folder": None if source.by_url else source.folder if source.split is not None else "images/",
            "info": _stated(source.path, "info"),
            "licenses": _stated(source.path, "licenses"),
        }
        for source in sources(root)
    ]

"""The ``saco`` layout: SA-Co's own files read as a collection (the package docstring says how).

The files are COCO-shaped, so the layout is the COCO layout's with another splitter
(``PairSplitter``): it reads each file's pairs and instances into the same per-shard pieces,
a photo one image of them, and ``PairReader`` adds each photo's pairs to its ``coverage``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from regionbench.core import tables
from regionbench.core.errors import read_json
from regionbench.core.hierarchy import Hierarchy
from regionbench.io.coco import split
from regionbench.io.coco.categories import hierarchy_of
from regionbench.io.coco.ingest import ANNOTATOR_NAME, ShardReader, category_label, mapped_label
from regionbench.io.coco.layout import CocoLayout
from regionbench.io.layouts import About, ImageRecord, Reading, ReleaseTables, TreeVocabulary
from regionbench.io.shards import IngestError


def sources(root: str | Path) -> tuple[split.Source, ...]:
    """The tree's pairs files (``split.holds_pairs``) in name order: each an annotator's, named
    as SA-Co/Gold names its files (``split.SACO_FILE``: the annotator after ``merged_``, the split after
    ``release_``) or, otherwise, by its stem."""
    found = []
    for path in split.json_files(root):
        if split.holds_pairs(path):
            named = split.SACO_FILE.fullmatch(path.stem)
            annotator, the_split = (named["annotator"], named["split"]) if named else (path.stem, None)
            found.append(split.Source(annotator, path, f"annotations/{path.name}", split=the_split))
    return tuple(found)


def check_sources(root: str | Path) -> tuple[split.Source, ...]:
    """``sources``, each an annotator's once: raises IngestError, one line, for a tree without
    one, a name that cannot be an annotator's, two files of one annotator (two subsets in one
    tree) or a file that is a byte copy of another."""
    listed = sources(root)
    if not listed:
        raise IngestError(f"{root}/annotations: no SA-Co file (a COCO-shaped file whose images have a text_input)")
    seen: dict[str, split.Source] = {}
    digests: dict[str, Path] = {}
    for source in listed:
        if not ANNOTATOR_NAME.fullmatch(source.annotator) or source.annotator == tables.CONSENSUS:
            raise IngestError(
                f"{source.shown}: annotator {source.annotator!r} cannot be an annotator's name (letters, digits, "
                f"'_', '.', '-'; not {tables.CONSENSUS!r}); rename the file"
            )
        if (earlier := seen.setdefault(source.annotator, source)) is not source:
            raise IngestError(
                f"{source.shown} and {earlier.shown} are both annotator {source.annotator!r}'s: a tree holds one "
                "SA-Co subset; give each subset its own tree"
            )
        if (digest := split.file_digest(source.path)) in digests:
            raise IngestError(
                f"{source.path}: a byte copy of {digests[digest].name}; an annotator counts once, remove the copy"
            )
        digests[digest] = source.path
    return listed


def _phrase(entry: Any) -> str | None:
    """An images entry's noun phrase when it has one a label can be made of, else None."""
    text = entry.get("text_input") if isinstance(entry, dict) else None
    return text if isinstance(text, str) and category_label(text) else None


def file_phrases(root: str | Path) -> dict[str, set[str]]:
    """Each annotator's noun phrases: those its file pairs a photo with, the file streamed once."""
    found = {}
    for source in sources(root):
        listed = split.top_level(source.path, "images")
        found[source.annotator] = {p for e in (listed if isinstance(listed, list) else []) if (p := _phrase(e))}
    return found


def phrases(root: str | Path, of_files: dict[str, set[str]] | None = None) -> dict[str, int]:
    """Every noun phrase the tree's files pair with a photo (``of_files``, when already read:
    ``file_phrases``) -> its category id: 1, 2, ... in name order, so each annotator's
    categories are numbered alike."""
    found = set().union(*(of_files if of_files is not None else file_phrases(root)).values())
    return {phrase: k for k, phrase in enumerate(sorted(found), 1)}


@dataclasses.dataclass(frozen=True)
class _Pair:
    name: str  # its photo's file name below images/
    phrase: str
    exhaustive: bool
    size: tuple[int, int]  # its photo's (height, width), as the file gives it


def _is_size(value: Any) -> bool:
    return split.is_id(value) and value > 0


class PairSplitter(split.Splitter):
    """``split.Splitter`` for SA-Co's files: a file's pairs are its images entries (each accepted
    or rejected), its instances its annotations, which go to the pieces as a COCO file's would,
    their photo the image and their phrase the category (``phrases``: ``phrase_ids``); each
    photo's images entry is made of its pairs (``pairs``: [category id, pair id], and LVIS's
    federated lists)."""

    def __init__(self, root: Path, the_plan: split.Plan, staging: Path, phrase_ids: dict[str, int]) -> None:
        super().__init__(root, the_plan, staging)
        self.plan_root, self.phrase_ids = root, phrase_ids
        self.ids: dict[int, tuple[str, str, str]] = {}  # pair id -> (photo, label, the file first giving it)
        self.numbers: dict[tuple[str, str], tuple[int, str]] = {}  # (photo, label) -> (pair id, that file)

    def finish(self, annotators: list[str], same_id: dict[str, list[str]], left_alone: Sequence[str]) -> None:
        """``split.Splitter.finish``, the tree's other files of ``annotations/`` (an instances
        file, captions: not SA-Co's) named as left alone in the first shard's report."""
        others = [f"annotations/{p.name}" for p in split.json_files(self.plan_root) if not split.holds_pairs(p)]
        super().finish(annotators, same_id, [*left_alone, *others])

    def _pair_problem(self, entry: Any, mine: dict[int, int], here: dict[tuple[str, str], int]) -> str | None:
        """What is wrong with an images entry as a pair of its file (``mine``: the file's pair
        ids so far -> where; ``here``: its (photo, label) -> pair id), or None."""
        if not isinstance(entry, dict):
            return "an images entry that is not a JSON object"
        pair = entry.get("id")
        if not split.is_id(pair):
            return f"pair id {pair!r} is not an integer"
        if pair in mine:
            return f"pair {pair} is listed twice (images[{mine[pair]}] too); keep one entry a pair"
        name = entry.get("file_name")
        if not isinstance(name, str) or not name:
            return f"pair {pair}: file_name {name!r} is not a file name"
        phrase = _phrase(entry)
        if phrase is None:
            return f"pair {pair} has no text_input (its noun phrase) with a letter or digit; every pair names one"
        if not (_is_size(entry.get("height")) and _is_size(entry.get("width"))):
            return f"pair {pair}: no height and width of its image"
        label = category_label(phrase)
        if (twin := here.get((name, label))) is not None:
            return f"pair {pair} pairs {name} with {phrase!r} as pair {twin} does; keep one"
        if (earlier := self.ids.get(pair)) is not None and earlier[:2] != (name, label):
            return (
                f"pair {pair} pairs {name} with {phrase!r} here but {earlier[0]} with {earlier[1]!r} in {earlier[2]}; "
                "number the pairs alike in every annotator's file"
            )
        if (number := self.numbers.get((name, label))) is not None and number[0] != pair:
            return f"pair {pair} pairs {name} with {phrase!r}, pair {number[0]} in {number[1]}; number the pairs alike in every annotator's file"
        return None

    def read(self, source: split.Source) -> None:
        """One SA-Co file: its pairs, then its instances, then each photo's entry."""
        annotator = source.annotator
        try:
            document = read_json(source.path, "an SA-Co file")
        except ValueError as exc:
            raise IngestError(f"{source.shown}: {exc}") from None
        listed = document.get("images") if isinstance(document, dict) else None
        annotations = document.get("annotations", []) if isinstance(document, dict) else None
        if not isinstance(listed, list) or not isinstance(annotations, list):
            raise IngestError(f"{source.shown}: an SA-Co file needs the lists images (its pairs) and annotations")
        names = {str(k): phrase for phrase, k in self.phrase_ids.items()}
        self.categories[annotator] = {"names": names, "ambiguous": {}, "listed_twice": [], "licenses": {}}
        self.contents.setdefault(annotator, hashlib.sha256()).update(
            json.dumps([listed, annotations], sort_keys=True).encode()
        )
        pairs: dict[int, _Pair] = {}
        where: dict[int, int] = {}
        here: dict[tuple[str, str], int] = {}
        for n, entry in enumerate(listed):
            problem = self._pair_problem(entry, where, here)
            named = entry.get("file_name") if isinstance(entry, dict) else None
            owner = named if isinstance(named, str) and named else None
            key = f"pair {entry['id']}" if isinstance(entry, dict) and split.is_id(entry.get("id")) else f"images[{n}]"
            self.count(source, "image-entry", key, owner, problem and f"{problem}; fix the entry")
            if isinstance(entry, dict) and split.is_id(entry.get("id")):
                where.setdefault(entry["id"], n)
            if problem is None and owner is not None:
                phrase = str(_phrase(entry))
                pairs[entry["id"]] = _Pair(
                    owner, phrase, bool(entry.get("is_instance_exhaustive")), (entry["height"], entry["width"])
                )
                here[(owner, category_label(phrase))] = entry["id"]
                self.ids.setdefault(entry["id"], (owner, category_label(phrase), source.shown))
                self.numbers.setdefault((owner, category_label(phrase)), (entry["id"], source.shown))
        annotated = self._instances(source, annotations, pairs, set(where))
        self._photos(source, listed, pairs, annotated)
        self.listed[annotator] += len(listed)

    def _instances(
        self, source: split.Source, annotations: list[Any], pairs: dict[int, _Pair], listed: set[int]
    ) -> set[int]:
        """Each instance to its photo's shard as a COCO annotation of its phrase's category, or
        rejected; returns the pairs any instance names."""
        annotated: set[int] = set()
        seen_ids: set[int] = set()
        for n, ann in enumerate(annotations):
            pair_id = ann.get("image_id") if isinstance(ann, dict) else None
            pair = pairs.get(pair_id) if split.is_id(pair_id) else None
            key = f"{pair.name if pair else f'pair {pair_id}'}/{ann.get('id', n) if isinstance(ann, dict) else n}"
            if split.is_id(pair_id) and pair is not None:
                annotated.add(pair_id)
            problem = self._instance_problem(ann, pair, pair_id, listed, seen_ids)
            shard = self.count(source, "region", key, pair.name if pair else None, problem)
            if problem is None and pair is not None:
                seen_ids.add(ann["id"])
                text = json.dumps(
                    ann | {"category_id": self.phrase_ids[pair.phrase]}, sort_keys=True, separators=(",", ":")
                )
                self.pieces[shard].rows.append((source.annotator, pair.name, ann["id"], text))
                self.buffered += len(text)
                if self.buffered > split.BUFFER_CHARS:
                    self.flush()
        return annotated

    @staticmethod
    def _instance_problem(
        ann: Any, pair: _Pair | None, pair_id: Any, listed: set[int], seen_ids: set[int]
    ) -> str | None:
        """What is wrong with an instance, or None."""
        if not isinstance(ann, dict):
            return "an annotations entry that is not a JSON object"
        if pair is None:
            return (
                f"its pair {pair_id} was rejected"
                if pair_id in listed
                else f"image_id {pair_id!r} names no pair of the file"
            )
        if not split.is_id(ann.get("id")) or ann["id"] in seen_ids:
            return "annotation id missing or used twice in this file"
        segmentation = ann.get("segmentation")
        if isinstance(segmentation, dict) and segmentation.get("size") != list(pair.size):
            return f"its RLE is of size {segmentation.get('size')}, its pair's image is {list(pair.size)}"
        return None

    def _photos(self, source: split.Source, listed: list[Any], pairs: dict[int, _Pair], annotated: set[int]) -> None:
        """Each photo of the file's accepted pairs, listed by its annotator as a COCO images entry
        would be: its size, its pairs, its negatives and its pairs not annotated exhaustively."""
        first: dict[str, int] = {}
        for n, entry in enumerate(listed):
            if isinstance(entry, dict) and entry.get("id") in pairs and split.is_id(entry.get("id")):
                first.setdefault(pairs[entry["id"]].name, n)
        of_photo: dict[str, list[tuple[int, int, bool]]] = defaultdict(list)
        size: dict[str, tuple[int, int]] = {}  # as the photo's first pair gives it
        for pair_id, pair in pairs.items():
            of_photo[pair.name].append((self.phrase_ids[pair.phrase], pair_id, pair.exhaustive))
            size.setdefault(pair.name, pair.size)
        for name, mine in of_photo.items():
            mine.sort()
            height, width = size[name]
            entry = {
                "id": None,  # a photo has no id of its own in SA-Co's files: its pairs have
                "file_name": name, "height": height, "width": width,
                "neg_category_ids": sorted(c for c, p, done in mine if done and p not in annotated),
                "not_exhaustive_category_ids": sorted(c for c, _, done in mine if not done),
                "pairs": [[c, p] for c, p, _ in mine],
            }  # fmt: skip
            piece = self.pieces[self.plan.shard_of(name)]
            piece.listed[name].append(source.annotator)
            piece.entries[name][source.annotator] = entry
            piece.files[name][source.annotator] = source.shown
            piece.positions[name][source.annotator] = self.listed[source.annotator] + first[name]
            if source.split is not None:
                piece.splits[name] = source.split


class PairReader(ShardReader):
    """``coco.ingest.ShardReader`` of a shard of SA-Co's pieces: each record's ``coverage`` also
    holds its photo's pairs in each annotator's file (``pair_ids``, ``pair_category_ids``)."""

    def records(self) -> Iterator[ImageRecord]:
        for record in super().records():
            for annotator, entry in self.entries.get(record.key, {}).items():
                listed = entry.get("pairs") or []
                record.federated[annotator] = record.federated.get(annotator, {}) | {
                    "pair_category_ids": [c for c, _ in listed],
                    "pair_ids": [p for _, p in listed],
                }
            yield record


class SacoLayout(CocoLayout):
    """``images/`` and SA-Co's files under ``annotations/``, one an annotator."""

    name = "saco"
    carries_credits = False
    expects = "images/ and SA-Co's files, annotations/gold_<subset>_merged_<annotator>_release_<split>.json"
    about = About(
        summary=(
            "from SA-Co's files (SAM 3's promptable concept benchmark): (image, noun phrase) pairs, each "
            "annotated with every instance of its phrase by several annotators, negatives (phrases with no "
            "instance) kept"
        ),
        tag="sa-co",
        keyword="SA-Co",
        fields={
            "images.image_id": "image id: the number its file name carries, else the first 63 bits of sha256(file name)",
            "regions.label_id": "id of the label in the vocabulary: the label of its pair's noun phrase",
            "regions.category_id": "its phrase's number among the tree's phrases (source_categories), not SA-Co's",
            "coverage.pair_ids": "the ids the annotator's file gives the image's (image, noun phrase) pairs",
            "coverage.neg_category_ids": "the phrases of the image's pairs annotated exhaustively without an instance",
            "coverage.not_exhaustive_category_ids": "the phrases of the image's pairs not annotated exhaustively",
        },
        evaluation_splits=("test",),
    )

    def detect(self, root: Path) -> bool:
        return any(split.holds_pairs(path) for path in split.json_files(root))

    def check(self, root: Path) -> None:
        if not (Path(root) / "images").is_dir():
            raise IngestError(f"raw_dir {root} has SA-Co's files but no images/ folder; put the photos there")
        check_sources(root)

    def inputs(self, root: Path) -> list[str]:
        return [str(source.path) for source in sources(root)]

    def annotators(self, root: Path) -> list[str]:
        return sorted(source.annotator for source in sources(root))

    def prepare(self, root: Path, out: Path, shard_size: int | None) -> dict[Any, Any]:
        """Every SA-Co file read once into the shards' pieces under ``out`` (``PairSplitter``)."""
        splitter = partial(PairSplitter, phrase_ids=phrases(root))
        return split.split(root, check_sources(root), out, shard_size, splitter)

    def read_shard(self, root: Path, shard: str, reading: Reading, hierarchy: Hierarchy | None) -> PairReader:
        if reading.pieces is not None:
            return PairReader(root, int(shard), reading)
        with tempfile.TemporaryDirectory() as scratch:  # the reader holds its piece once made
            self.prepare(root, Path(scratch), reading.shard_size)
            return PairReader(root, int(shard), dataclasses.replace(reading, pieces=scratch))

    def write_vocabulary(self, root: Path, out: Path) -> TreeVocabulary:
        """``hierarchy.yaml``: each phrase's label under ``entity``; ``category_names.tsv``: the
        phrases that are not labels as they stand, with theirs."""
        found = phrases(root)
        if not found:
            raise IngestError(f"{root}/annotations: no pair names a noun phrase in any SA-Co file")
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        tree = hierarchy_of({category_label(p): None for p in found})
        tree.write_yaml(out / "hierarchy.yaml", "Built from SA-Co's noun phrases: each under entity.")
        renamed = {p: category_label(p) for p in found if category_label(p) != p}
        rows = "".join(f"{name}\t{label}\n" for name, label in renamed.items())
        (out / "category_names.tsv").write_text("name\tlabel\n" + rows, encoding="utf-8")
        return TreeVocabulary(tree.labels, {"labels": len(tree.labels), "supercategories": 0, "renamed": len(renamed)})

    def source_categories(self, root: Path, reading: Reading) -> list[dict[str, Any]]:
        """Each annotator's phrases (those its file pairs a photo with) as categories, numbered as
        ``phrases`` numbers them, with the label each maps to."""
        of_files = file_phrases(root)  # each file read once, for the numbering and the rows
        ids = phrases(root, of_files)
        rows = []
        for annotator, mine in of_files.items():
            rows += [
                {"annotator": annotator, "category_id": ids[p], "name": p, "supercategory": None,
                 "label": label if (label := mapped_label(p, reading.words, reading.category_map)) in reading.words else None}
                for p in sorted(mine)
            ]  # fmt: skip
        return rows

    def describe_source(self, root: Path) -> dict[str, str | None]:
        return dict.fromkeys(("name", "homepage", "citation", "license"))

    def source_files(self, root: Path) -> list[dict[str, Any]]:
        """None: SA-Co's files are written back by the ``saco`` export, from the pairs in
        ``coverage``; a COCO export of the release writes instances files of its own names
        (``annotations/<annotator>.json``), not COCO-shaped files under SA-Co's."""
        return []

    def export(self, release: ReleaseTables, out: Path, images: Path | None, annotator: str | None) -> list[str]:
        """The release as SA-Co's files (``io.saco.export``)."""
        from regionbench.io.saco.export import export

        return export(release, out, images, annotator)

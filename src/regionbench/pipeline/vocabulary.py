"""The annotation vocabulary: candidate lists -> C-list -> curation -> labels with stable ids.

Procedure (paper §3.1; docs/vocabulary.md):

1. Three candidate lists: H (``h_list.txt``), T (``t_list.txt``) and A, derived from the
   captions: every word (or hyphenated H/T candidate spelled as a phrase) mentioned at least
   ``a_list.min_count`` times.
2. The C-list holds the candidates found in at least ``min_lists`` lists.
3. Curation drops the C-list words named in ``drop`` (with the curators' reason) and those the
   captions mention fewer than ``caption_min_count`` times, then adds the words in ``add``
   (with their source) although they missed the C-list.
4. Every curated label must be a node of ``hierarchy.yaml``; the hierarchy's other nodes
   (such as ``sky`` or ``generic-objects``) join the vocabulary as hierarchy nodes.

Caption tokenisation: text is lower-cased and split into runs of letters (accented letters
included; digits and punctuation separate words). Each token is reduced to a simple singular:
a table of irregular plurals (men -> man, children -> child, leaves -> leaf ...), then
``-ies`` -> ``-y``, ``-ses/-xes/-ches/-shes`` lose ``-es``, and a final ``-s`` is dropped
unless the word ends in ``ss``, ``us`` or ``is``. Stop words (articles, pronouns,
prepositions, auxiliaries, number words and a few photo-caption fillers) are not counted as
words but do take part in phrases, so "group of persons" counts for ``group-of-persons``.

Label ids come from the append-only registry ``label_ids.tsv``; see ``Registry``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from regionbench.core import numbers, tables, yamlfile
from regionbench.core.errors import InputError
from regionbench.core.hierarchy import Hierarchy

# The SAIAPR TC-12 vocabulary that ships with the library: hierarchy.yaml, label_ids.tsv, the
# candidate lists and curation.yaml (docs/vocabulary.md).
DEFAULT_DIR = Path(str(resources.files("regionbench") / "data" / "vocabulary"))


class VocabularyError(InputError):
    """An input to the vocabulary stage that must be fixed; one line says what and where."""


STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "in",
        "on",
        "at",
        "to",
        "from",
        "by",
        "for",
        "with",
        "without",
        "into",
        "onto",
        "over",
        "under",
        "above",
        "below",
        "behind",
        "between",
        "near",
        "next",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "has",
        "have",
        "had",
        "there",
        "here",
        "some",
        "many",
        "several",
        "few",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "who",
        "which",
        "while",
        "as",
        "than",
        "very",
        "also",
        "his",
        "her",
        "their",
        "our",
        "my",
        "your",
        "its",
        "they",
        "he",
        "she",
        "we",
        "you",
        "i",
        "me",
        "him",
        "them",
        "picture",
        "photo",
    ]
)
IRREGULAR = {
    "men": "man",
    "women": "woman",
    "children": "child",
    "people": "person",
    "leaves": "leaf",
    "wolves": "wolf",
    "shelves": "shelf",
    "mice": "mouse",
    "feet": "foot",
    "teeth": "tooth",
    "geese": "goose",
    "knives": "knife",
    "fishes": "fish",
    "buses": "bus",
    "glasses": "glass",
}
_WORD = re.compile(r"[^\W\d_]+")


def singular(word: str) -> str:
    """A simple singular form (see the module docstring for the rules)."""
    if word in IRREGULAR:
        return IRREGULAR[word]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Lower-cased singular word tokens of a caption, stop words included."""
    return [singular(w) for w in _WORD.findall(text.lower())]


def phrase(label: str) -> tuple[str, ...]:
    """How a (possibly hyphenated) label reads as tokens: ``group-of-persons`` -> group of person."""
    return tuple(tokenize(label.replace("-", " ")))


def caption_counts(texts: Iterable[str], labels: Iterable[str]) -> tuple[Counter, Counter]:
    """(word counts without stop words, mention counts of each label's phrase)."""
    phrases: dict[tuple[str, ...], list[str]] = {}
    for label in labels:
        phrases.setdefault(phrase(label), []).append(label)
    lengths = sorted({len(p) for p in phrases if p})
    words: Counter = Counter()
    mentions: Counter = Counter()
    for text in texts:
        tokens = tokenize(text)
        words.update(t for t in tokens if t not in STOP_WORDS)
        for n in lengths:
            for i in range(len(tokens) - n + 1):
                for label in phrases.get(tuple(tokens[i : i + n]), ()):
                    mentions[label] += 1
    return words, mentions


def read_word_list(path: str | Path) -> list[str]:
    """A candidate list: one label per line, UTF-8; blank lines and ``#`` comments skipped."""
    path = Path(path)
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise VocabularyError(
            f"{path}:{line}: not UTF-8 (byte 0x{data[exc.start]:02x}); re-save the list as UTF-8"
        ) from None
    words = [w.strip().lower() for w in text.splitlines()]
    return sorted({w for w in words if w and not w.startswith("#")})


@dataclass(frozen=True)
class Curation:
    min_lists: int
    a_min_count: int
    caption_min_count: int
    drop: dict[str, str]
    add: dict[str, str]

    @classmethod
    def from_yaml(cls, path: str | Path) -> Curation:
        data: Any = yamlfile.read(path, VocabularyError, "curation file")
        try:
            return cls(
                min_lists=int(data["min_lists"]),
                a_min_count=int(data["a_list"]["min_count"]),
                caption_min_count=int(data["caption_min_count"]),
                drop=dict(data.get("drop") or {}),
                add=dict(data.get("add") or {}),
            )
        except (KeyError, TypeError) as exc:
            raise VocabularyError(f"{path}: missing setting {exc}; see the comments in curation.yaml") from None


def a_list(words: Counter, mentions: Counter, min_count: int) -> dict[str, int]:
    """Caption words and candidate phrases mentioned at least ``min_count`` times."""
    out = {w: c for w, c in words.items() if c >= min_count}
    out.update({label: c for label, c in mentions.items() if "-" in label and c >= min_count})
    return dict(sorted(out.items()))


def curate(lists: dict[str, set[str]], mentions: Counter, curation: Curation) -> tuple[set[str], list[dict]]:
    """The curated vocabulary and the fate of every word that any list or the add list names."""
    final: set[str] = set()
    fates = []
    for word in sorted(set().union(*lists.values()) | set(curation.add)):
        n_lists = sum(word in members for members in lists.values())
        in_c = n_lists >= curation.min_lists
        count = int(mentions.get(word, 0))
        if word in curation.add:
            fate, reason = ("kept", "in the C-list") if in_c else ("added", curation.add[word])
        elif not in_c:
            fate, reason = "not in C-list", f"in {n_lists} list(s), fewer than {curation.min_lists}"
        elif word in curation.drop:
            fate, reason = "dropped", curation.drop[word]
        elif count < curation.caption_min_count:
            fate, reason = "dropped", f"mentioned {count} time(s) in captions, fewer than {curation.caption_min_count}"
        else:
            fate, reason = "kept", "in the C-list"
        if fate in ("kept", "added"):
            final.add(word)
        fates.append(
            {
                "word": word,
                **{f"in_{k}_list": word in v for k, v in lists.items()},
                "n_lists": n_lists,
                "c_list": in_c,
                "caption_count": count,
                "fate": fate,
                "reason": reason,
            }
        )
    return final, fates


@dataclass
class Registry:
    """Append-only label ids: ``id<TAB>label<TAB>status`` with status active, retired or reserved.

    ``register`` gives each new label the next id after the largest ever used, marks labels
    that left the vocabulary ``retired`` (their ids are never given to another label) and
    re-activates a retired label that comes back under its old id. ``reserved`` rows (such as
    id 1, ``n.a.`` in the official word list) are left alone.
    """

    rows: list[tuple[int, str, str]] = field(default_factory=list)

    @classmethod
    def read(cls, path: str | Path) -> Registry:
        rows = []
        for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip() or line.startswith("#") or line.startswith("id\t"):
                continue
            parts = line.split("\t")
            if len(parts) != 3 or not numbers.is_id(parts[0]) or parts[2] not in ("active", "retired", "reserved"):
                raise VocabularyError(f"{path}:{n}: expected 'id<TAB>label<TAB>active|retired|reserved', got {line!r}")
            rows.append((int(parts[0]), parts[1], parts[2]))
        ids = [r[0] for r in rows]
        names = [r[1] for r in rows]
        if len(set(ids)) != len(ids) or len(set(names)) != len(names):
            raise VocabularyError(f"{path}: an id or a label appears twice; each must be unique")
        return cls(sorted(rows))

    def write(self, path: str | Path) -> None:
        head = (
            "# Label id registry: append-only. A new label gets the next id; a removed label is marked\n"
            "# `retired` and its id is never given again. Update with `regionbench vocabulary register`.\n"
            "id\tlabel\tstatus\n"
        )
        Path(path).write_text(head + "".join(f"{i}\t{label}\t{s}\n" for i, label, s in self.rows), encoding="utf-8")

    def ids(self) -> dict[str, int]:
        """Label -> id of every label that is not retired."""
        return {label: i for i, label, status in self.rows if status != "retired"}

    def active_ids(self) -> dict[str, int]:
        """Label -> id of the labels of this vocabulary (``active``): the ones its table holds."""
        return {label: i for i, label, status in self.rows if status == "active"}

    def seed(self, ids: Mapping[str, int], labels: Iterable[str], where: str) -> Registry:
        """The registry with a source's own ids (label -> id) added: a label that is not in
        ``labels`` is ``reserved``. A label the registry gives another id, or an id it gives
        another label, is an error naming ``where``: ids never change meaning."""
        known = {label: i for i, label, _ in self.rows}
        taken = {i: label for i, label, _ in self.rows}
        wanted = set(labels)
        # a source word the registry kept reserved becomes active once a label
        rows = [(i, label, "active" if label in ids and label in wanted else s) for i, label, s in self.rows]
        for label, i in sorted(ids.items(), key=lambda item: item[1]):
            if known.get(label, i) != i or taken.get(i, label) != label:
                other = f"{label!r} id {known[label]}" if known.get(label, i) != i else f"id {i} to {taken[i]!r}"
                raise VocabularyError(
                    f"{where} gives {other} but the source numbers {label!r} {i}; "
                    "remove the registry to take the source's ids, or set vocabulary_dir to keep it"
                )
            if label not in known:
                rows.append((i, label, "active" if label in wanted else "reserved"))
        return Registry(sorted(rows))

    def register(self, labels: Iterable[str]) -> Registry:
        wanted = set(labels)
        known = {label for _, label, _ in self.rows}
        rows = []
        for i, label, status in self.rows:
            if status != "reserved":
                status = "active" if label in wanted else "retired"
            rows.append((i, label, status))
        next_id = max((r[0] for r in self.rows), default=0) + 1
        for offset, label in enumerate(sorted(wanted - known)):
            rows.append((next_id + offset, label, "active"))
        return Registry(sorted(rows))


def check_annotated(tree: Hierarchy, used: dict[str, list[str]]) -> None:
    """Fail if an annotation uses a label the vocabulary lacks; ``used`` maps label -> where."""
    missing = sorted(set(used) - set(tree.nodes))
    if missing:
        detail = "; ".join(f"{label!r} ({len(used[label])} regions, e.g. {used[label][0]})" for label in missing[:8])
        raise VocabularyError(
            f"labels used by annotations but missing from the vocabulary: {detail}; add them to hierarchy.yaml or fix labels.txt"
        )


def vocabulary_table(
    tree: Hierarchy,
    fates: list[dict],
    lists: dict[str, set[str]],
    mentions: Counter,
    registry: Registry,
    region_counts: Counter,
    image_counts: Counter,
) -> pa.Table:
    """One row per hierarchy node below the root, sorted by label id.

    ``origin`` is ``candidate`` for a label curated from the C-list, ``added`` for one from the
    add list and ``hierarchy node`` for a node the hierarchy needs that no list supplied.
    """
    origin = {
        f["word"]: "added" if f["fate"] == "added" else "candidate" for f in fates if f["fate"] in ("kept", "added")
    }
    final = set(origin)
    unplaced = sorted(final - set(tree.nodes))
    if unplaced:
        raise VocabularyError(
            f"curated labels with no place in hierarchy.yaml: {', '.join(unplaced)}; add a node for each or drop it in curation.yaml"
        )
    ids = registry.ids()
    no_id = sorted(set(tree.labels) - set(ids))
    if no_id:
        raise VocabularyError(
            f"labels without an id in label_ids.tsv: {', '.join(no_id[:10])}; run `regionbench vocabulary register`"
        )
    rows = []
    for label in tree.labels:
        node = tree.nodes[label]
        rows.append(
            {
                "label_id": ids[label],
                "label": label,
                "parent": node.parent,
                "depth": tree.depth(label),
                "path": "->".join(tree.path(label)),
                "relation": node.relation,
                "is_leaf": tree.is_leaf(label),
                "group": node.group,
                **{f"in_{k}_list": label in v for k, v in lists.items()},
                "origin": origin.get(label, "hierarchy node"),
                "caption_count": int(mentions.get(label, 0)),
                "region_count": int(region_counts.get(label, 0)),
                "image_count": int(image_counts.get(label, 0)),
            }
        )
    return pa.Table.from_pylist(rows, schema=tables.VOCABULARY).sort_by("label_id")


def branch_stats(tree: Hierarchy, region_counts: Counter) -> pa.Table:
    """Paper Table 2: per first-level node, regions labelled with it or below it (frequency),
    and the descendants and leaf descendants that the annotation uses (at least one region; the
    paper's leaves add up to the 200 used); normalised frequency = frequency / descendants."""
    rows = []
    for branch in tree.children[tree.root]:
        below = [x for x in tree.descendants(branch) if region_counts.get(x, 0) > 0]
        frequency = sum(region_counts.get(x, 0) for x in [branch, *below])
        rows.append(
            {
                "branch": branch,
                "frequency": frequency,
                "normalised_frequency": frequency / len(below) if below else float(frequency),
                "descendants": len(below),
                "leaves": sum(tree.is_leaf(x) for x in below),
            }
        )
    return pa.Table.from_pylist(rows, schema=tables.BRANCH_STATS).sort_by("branch")


@dataclass
class VocabularyBuild:
    vocabulary: pa.Table
    branches: pa.Table
    procedure: dict


def build(
    config_dir: str | Path, captions: Iterable[str], used: dict[str, list[str]], images_per_label: Counter
) -> VocabularyBuild:
    """Run the whole procedure from a vocabulary folder (``DEFAULT_DIR``) and the ingested annotations.

    ``captions``: caption texts; ``used``: label -> where each region using it sits
    ("00: image 12 region 2"); ``images_per_label``: label -> number of images showing it.
    """
    config_dir = Path(config_dir)
    tree = Hierarchy.from_yaml(config_dir / "hierarchy.yaml")
    curation = Curation.from_yaml(config_dir / "curation.yaml")
    h_list = set(read_word_list(config_dir / "h_list.txt"))
    t_list = set(read_word_list(config_dir / "t_list.txt"))
    words, mentions = caption_counts(captions, h_list | t_list | set(tree.labels) | set(curation.add))
    # Only H/T candidates are looked for as phrases: the A-list is what captions say on their own.
    candidate_mentions = Counter({k: v for k, v in mentions.items() if k in h_list | t_list})
    derived = a_list(words, candidate_mentions, curation.a_min_count)
    lists = {"h": h_list, "a": set(derived), "t": t_list}
    check_annotated(tree, used)
    _, fates = curate(lists, mentions, curation)
    region_counts = Counter({label: len(where) for label, where in used.items()})
    table = vocabulary_table(
        tree, fates, lists, mentions, Registry.read(config_dir / "label_ids.tsv"), region_counts, images_per_label
    )
    procedure = {
        "settings": {
            "min_lists": curation.min_lists,
            "a_list_min_count": curation.a_min_count,
            "caption_min_count": curation.caption_min_count,
        },
        "list_sizes": {k: len(v) for k, v in lists.items()},
        "a_list": derived,
        "c_list": sorted(f["word"] for f in fates if f["c_list"]),
        "candidates": fates,
        "vocabulary_size": table.num_rows,
    }
    return VocabularyBuild(table, branch_stats(tree, region_counts), procedure)


def annotations_from_shards(
    images: Iterable[str | Path], regions: Iterable[str | Path]
) -> tuple[list[str], dict[str, list[str]], Counter]:
    """Captions, label -> region locations, and label -> image count from ingest shard tables."""
    captions = []
    for path in images:
        table = pq.read_table(path, columns=["caption_title", "caption_description"])
        for title, description in zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True):
            captions.append(f"{title or ''}. {description or ''}")
    used: dict[str, list[str]] = {}
    shown: dict[str, set[int]] = {}
    for path in regions:
        table = pq.read_table(path, columns=["image_id", "region_id", "label"])
        shard = Path(path).parent.name
        for image_id, region_id, label in zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True):
            used.setdefault(label, []).append(f"{shard}: image {image_id} region {region_id}")
            shown.setdefault(label, set()).add(image_id)
    return captions, used, Counter({label: len(ids) for label, ids in shown.items()})


# The curation of a vocabulary taken from a tree's categories: every label is in both lists
# (so each passes min_lists 2) and no caption threshold drops one.
TREE_CURATION = {
    "min_lists": 2,
    "a_list": {"min_count": 1_000_000_000},
    "caption_min_count": 0,
    "drop": {},
    "add": {},
}


def derive(layout: str, root: str | Path, out: str | Path) -> dict[str, int]:
    """The vocabulary folder ``out`` of a raw tree whose ``layout`` names its categories: the
    layout's ``hierarchy.yaml`` (``io.layouts.NamesCategories``), both candidate lists holding
    every label, ``curation.yaml`` (``TREE_CURATION``) and ids registered append-only: an
    existing ``label_ids.tsv`` in ``out`` is kept and extended, the source's own ids first
    (``Registry.seed``). Returns the layout's counts and ``new_ids``."""
    from regionbench.io import layouts  # a build's concern: readers of releases need no image library

    found = layouts.get(layout)
    if not isinstance(found, layouts.NamesCategories):
        raise VocabularyError(f"{layout} trees do not name their categories; write the vocabulary folder yourself")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tree = found.write_vocabulary(Path(root), out)
    words = "".join(f"{label}\n" for label in tree.labels)
    (out / "h_list.txt").write_text(words, encoding="utf-8")
    (out / "t_list.txt").write_text(words, encoding="utf-8")
    (out / "curation.yaml").write_text(yaml.safe_dump(TREE_CURATION, sort_keys=True), encoding="utf-8")
    path = out / "label_ids.tsv"
    old = Registry.read(path) if path.is_file() else Registry([])
    new = old.seed(tree.ids, tree.labels, str(path)).register(tree.labels)
    new.write(path)
    return tree.counts | {"new_ids": len(set(new.ids()) - set(old.ids()))}


def source_categories(
    layout: str, root: str | Path, words: Mapping[str, int], category_map: Mapping[str, str]
) -> pa.Table:
    """The release table ``source_categories`` of a raw tree: each annotator's categories as its
    files name them, with the label each maps to (``io.layouts.NamesCategories``); no rows for a
    layout whose files name none."""
    from regionbench.io import layouts  # a build's concern: readers of releases need no image library
    from regionbench.io.layouts import Reading

    found = layouts.get(layout)
    rows = []
    if isinstance(found, layouts.NamesCategories):
        rows = found.source_categories(Path(root), Reading(words=words, category_map=category_map))
    return tables.from_rows(rows, tables.SOURCE_CATEGORIES, tables.KEYS["source_categories"])

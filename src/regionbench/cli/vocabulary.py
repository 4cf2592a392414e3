"""The commands of the label vocabulary: ``hierarchy`` (the tree shown, e_hierarchy) and
``vocabulary`` (the id registry, a vocabulary from a raw tree's own categories)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from regionbench.core import numbers

if TYPE_CHECKING:
    from regionbench.core.hierarchy import Hierarchy


def _hierarchy(args: argparse.Namespace) -> Hierarchy:
    import pyarrow.parquet as pq

    from regionbench.core.hierarchy import Hierarchy
    from regionbench.pipeline import vocabulary

    if args.saiapr:
        from regionbench.io.saiapr import hierarchy_from_saiapr

        return hierarchy_from_saiapr(args.saiapr)
    path = Path(args.yaml) if args.yaml else vocabulary.DEFAULT_DIR / "hierarchy.yaml"
    tree = Hierarchy.from_yaml(path)
    if args.vocabulary:
        table = pq.read_table(args.vocabulary, columns=["label", "region_count"]).to_pydict()
        tree.counts = dict(zip(table["label"], table["region_count"], strict=True))
    return tree


def cmd_hierarchy_show(args: argparse.Namespace) -> int:
    print(_hierarchy(args).render())
    return 0


def cmd_hierarchy_ehier(args: argparse.Namespace) -> int:
    tree = _hierarchy(args)
    errors = tree.e_hierarchy([args.true] * len(args.pred), args.pred, args.direction, args.threshold)
    for pred, e in zip(args.pred, errors, strict=True):
        print(f"e_hierarchy({args.true}, {pred}) = {e:.4f}{'  (soft-correct)' if e < 1 else ''}")
    return 0


def vocabulary_register(args: argparse.Namespace) -> int:
    from regionbench.core.hierarchy import Hierarchy
    from regionbench.pipeline import vocabulary

    folder = Path(args.dir) if args.dir else vocabulary.DEFAULT_DIR
    registry_path = Path(args.registry) if args.registry else folder / "label_ids.tsv"
    tree = Hierarchy.from_yaml(Path(args.yaml) if args.yaml else folder / "hierarchy.yaml")
    old = vocabulary.Registry.read(registry_path)
    new = old.register(tree.labels)
    added = sorted(set(new.ids()) - set(old.ids()))
    retired = sorted(set(old.ids()) - set(new.ids()))
    new.write(registry_path)
    print(
        f"{registry_path}: {len(added)} added ({', '.join(added) or '-'}), {len(retired)} retired ({', '.join(retired) or '-'})"
    )
    return 0


def vocabulary_from_source(args: argparse.Namespace) -> int:
    from regionbench.io import layouts
    from regionbench.pipeline import vocabulary

    layout = args.layout or layouts.detect(args.root).name
    counts = vocabulary.derive(layout, Path(args.root), Path(args.out))
    found = ", ".join(f"{n} {what}" for what, n in counts.items() if what not in ("new_ids", "renamed"))
    print(f"{args.out}: {found}, {counts['new_ids']} new ids; set vocabulary_dir: {args.out} in the config")
    if counts.get("renamed"):
        print(
            f"{args.out}/category_names.tsv: {counts['renamed']} category names that are not labels as they stand, "
            "each with the label it maps to (lower case, '-' for spaces and other characters)"
        )
    return 0


def add_hierarchy(sub: argparse._SubParsersAction) -> None:
    """hierarchy: the label tree."""
    h = sub.add_parser("hierarchy", help="inspect the label hierarchy")
    hsub = h.add_subparsers(dest="action", required=True)
    for name, func, text in (
        ("show", cmd_hierarchy_show, "print the tree with depths, counts and conflicts"),
        ("ehier", cmd_hierarchy_ehier, "print e_hierarchy of predictions against a true label"),
    ):
        a = hsub.add_parser(name, help=text)
        source = a.add_mutually_exclusive_group()
        source.add_argument("--saiapr", metavar="ROOT", help="rebuild from a SAIAPR tree's ontology_path.txt files")
        source.add_argument("--yaml", metavar="PATH", help="hierarchy.yaml (default: the library's)")
        a.add_argument("--vocabulary", metavar="PARQUET", help="vocabulary.parquet whose region counts to show")
        a.set_defaults(func=func)
        if name == "ehier":
            a.add_argument("true", help="the true label")
            a.add_argument("pred", nargs="+", help="predicted labels, each scored against TRUE")
            a.add_argument(
                "--direction",
                choices=["any", "specific", "general"],
                default="any",
                help="credit ancestors and descendants (any), only labels below TRUE (specific) or above it (general)",
            )
            a.add_argument(
                "--threshold", type=numbers.argument(float, 0, 1), default=None, help="e above it counts as 1"
            )


def add_vocabulary(sub: argparse._SubParsersAction) -> None:
    """vocabulary: the vocabulary folder."""
    v = sub.add_parser("vocabulary", help="maintain the vocabulary")
    vsub = v.add_subparsers(dest="action", required=True)
    r = vsub.add_parser("register", help="append new hierarchy labels to the id registry, retire removed ones")
    r.add_argument("--dir", metavar="DIR", help="vocabulary folder (default: the library's SAIAPR vocabulary)")
    r.add_argument("--yaml", metavar="PATH", help="hierarchy.yaml (default: DIR/hierarchy.yaml)")
    r.add_argument("--registry", metavar="PATH", help="label_ids.tsv (default: DIR/label_ids.tsv)")
    r.set_defaults(func=vocabulary_register)
    for command in ("from-source", "from-coco"):
        fc = vsub.add_parser(
            command,
            help="a vocabulary and hierarchy from a raw tree's own categories (any layout that names them)"
            if command == "from-source"
            else "the same as from-source --layout coco (kept for one version)",
        )
        fc.add_argument(
            "root",
            help="raw tree (COCO: images/ and annotations/<annotator>.json; SAIAPR: wlist.txt, NN/ontology_path.txt)",
        )
        fc.add_argument("--out", required=True, metavar="DIR", help="vocabulary folder to write (its registry is kept)")
        if command == "from-source":
            fc.add_argument("--layout", default=None, help="the tree's layout (default: detected)")
        else:
            fc.set_defaults(layout="coco")
        fc.set_defaults(func=vocabulary_from_source)

"""The dataset card (``README.md``) of a release: Hugging Face front matter, then statistics,
provenance, known conflicts and how to cite. Everything comes from the release folder itself."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from regionbench.core.numbers import counted
from regionbench.release import huggingface, rai
from regionbench.release.manifest import OTHER, UNKNOWN, card_licence
from regionbench.release.schemas import TABLES, load_schemas


@dataclass(frozen=True)
class Source:
    """What the card and Croissant say about where a release's images and regions come from."""

    summary: str  # completes "A region-annotated image benchmark ..."
    source_datasets: list[str]  # Hugging Face's source_datasets
    tags: list[str]
    creators: str  # Hugging Face's annotations_creators
    url: str | None  # the collection's home
    based_on: str | None  # schema.org isBasedOn
    keyword: str
    citation: str  # BibTeX of what the card asks users to cite
    name: str | None = None  # the collection's name
    images_license: str | None = None  # the licence of the images, as the source states it


def source(manifest: dict) -> Source:
    """The release's ``Source``: its manifest's ``source`` (what the build found of the
    collection, ``pipeline.source.describe``; a release made before it has none) over what its
    ``layout`` (absent: saiapr) says of its collections (``io.layouts.About``). A generated
    collection follows the recipe of the benchmark its layout comes from, and cites it, but is
    not derived from it."""
    from regionbench.io import layouts  # the layouts read images: a build's concern, not a reader's

    synthetic = manifest["synthetic"]
    about = layouts.get(manifest.get("layout", "saiapr")).about
    given = manifest.get("source") or {}
    homepage = None if synthetic else given.get("homepage", about.original)
    own = (
        f"@misc{{{manifest['dataset']}_{manifest['version'].replace('.', '_')}, "
        f"title={{regionbench {manifest['dataset']} v{manifest['version']}}}, "
        f"author={{{manifest['creator']}}}, year={{{manifest['date'][:4]}}}}}"
    )
    return Source(
        summary=about.summary,
        source_datasets=["original" if synthetic else about.source_dataset],
        tags=["region-annotation", about.tag, *(["synthetic"] if synthetic else [])],
        creators="machine-generated" if synthetic else about.creators,
        url=homepage,
        based_on=about.original if synthetic else homepage,
        keyword=about.keyword,
        citation=(about.citation if synthetic else given.get("citation", about.citation)) or own,
        name=None if synthetic else given.get("name", about.name),
        images_license=manifest["license"] if synthetic else given.get("license"),
    )


def has_captions(folder: Path) -> bool:
    """Whether any image of the release has a caption (a language to declare)."""
    path = Path(folder) / "data" / "images.parquet"
    return path.is_file() and pq.read_table(path, columns=["caption_title"])["caption_title"].null_count < (
        pq.read_metadata(path).num_rows
    )


def has_subsets(manifest: dict) -> bool:
    """Whether the release has subsets A-H (a label-free or single-label collection has none)."""
    return bool(manifest["tables"].get("subsets", {}).get("rows"))


class Bounded(float):
    """A figure with its 95 % bootstrap interval (a report's ``intervals``): a float, shown with
    its bounds, ``0.4321 [0.4100, 0.4530]``."""

    low: float
    high: float

    def __new__(cls, value: float, low: float, high: float) -> Bounded:
        figure = super().__new__(cls, value)
        figure.low, figure.high = low, high
        return figure


def markdown_table(header: list[str], rows: list[list]) -> list[str]:
    """A Markdown table of ``header`` and ``rows``, a float to four decimals (a ``Bounded`` one
    with its interval): its lines."""

    def cell(v: object) -> str:
        if isinstance(v, Bounded):
            return f"{v:.4f} [{v.low:.4f}, {v.high:.4f}]"
        return f"{v:.4f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]


SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


def size_category(n: int) -> str:
    """Hugging Face's size category of a dataset of ``n`` examples (here: regions)."""
    return next((name for bound, name in SIZE_CATEGORIES if n < bound), "1M<n<10M")


def _front_matter(folder: Path, manifest: dict) -> list[str]:
    """The YAML metadata Hugging Face reads, made by ``huggingface_hub``'s ``DatasetCardData``."""
    from huggingface_hub import DatasetCardData  # the build's: the client never writes cards

    origin = source(manifest)
    # The release's licence covers its annotations; embedded photographs keep their own.
    licence: dict[str, Any] = dict(card_licence(manifest))
    # A language only where there is text in one: the captions.
    language: dict[str, Any] = {
        "language": ["en"],
        "language_creators": [origin.creators],
        "multilinguality": ["monolingual"],
    }
    data = DatasetCardData(
        pretty_name=f"regionbench {manifest['dataset']} v{manifest['version']}",
        **licence,
        **(language if has_captions(folder) else {}),
        task_categories=["image-segmentation", *(["image-classification"] if has_subsets(manifest) else [])],
        tags=origin.tags,
        size_categories=[size_category(manifest["tables"]["regions"]["rows"])],
        annotations_creators=[origin.creators],
        source_datasets=origin.source_datasets,
        configs=huggingface.configs(folder, manifest),
        dataset_info=huggingface.dataset_info(folder, manifest),
    )
    return ["---", data.to_yaml(), "---"]


def _fields(schemas: dict) -> list[str]:
    """The field dictionary: every column of every table, its type and meaning."""
    out = ["## Fields", ""]
    for name in TABLES:
        doc = schemas[name].document
        out += [f"### {name}", "", doc["description"], ""]
        out += markdown_table(
            ["column", "type", "description"],
            [[f"`{c}`", spec["x-arrow-type"], spec["description"]] for c, spec in doc["properties"].items()],
        )
        out.append("")
    return out


def _results(folder: Path, name: str) -> Path | None:
    path = folder / "results" / name
    return path if path.is_file() else None


LABELS_LISTED = 15


def _coverage(coverage: dict) -> list[str]:
    """Who covered which images (``agreement.coverage_summary``), and the consensus quorum."""
    per = ", ".join(f"{name} {n}" for name, n in coverage["per_annotator"].items())
    if coverage["complete"]:
        head = f"Coverage: every annotator covered all {coverage['images']} images."
    else:
        head = (
            f"Coverage: annotators covered some of the {coverage['images']} images each ({per}); the table"
            " `coverage` lists who covered which. Every figure here compares only annotators who both"
            " covered an image, and an annotator absent from an image casts no consensus vote."
        )
    out = [head, ""]
    out += markdown_table(
        ["annotators covering an image", "images", "consensus quorum (votes)"],
        [[int(n), count, coverage["quorum"][n]] for n, count in coverage["images_by_annotators"].items()],
    )
    return [*out, ""]


def _agreement(report: dict, has_figure: bool) -> list[str]:
    """The card's agreement section from an ``agreement.summary`` report."""
    out = [f"## Agreement between annotators ({', '.join(report['annotators'])})", ""]
    rows = [
        [f"regions matched one to one (IoU >= {report['min_iou']}), share", report["matched_share"]],
        ["mean IoU of matched regions", report["mean_iou"]],
        ["mean Dice of matched regions", report["mean_dice"]],
    ]
    if report["labelled"]:  # with one label these are 1 by construction: not shown
        rows += [
            ["same label, matched regions", report["exact_label"]],
            ["label within the hierarchy (e < 1), matched regions", report["hierarchical_label"]],
            ["pixel Cohen's kappa, mean over image pairs", report["pixel_kappa"]],
            ["Fleiss' kappa", report["fleiss_kappa"]],
            ["Krippendorff's alpha (nominal)", report["krippendorff_alpha"]],
        ]
    out += markdown_table(["measure", "value"], rows)
    out.append("")
    if report["labelled"]:
        out += [f"Fleiss' kappa and Krippendorff's alpha use {report['method']} ({report['units']} units).", ""]
    if coverage := report.get("coverage"):
        out += _coverage(coverage)
    if not report["labelled"]:
        out += [
            f"Every segment carries the one label `{report['per_label'][0]['label']}`: label agreement is 1 by",
            "construction and not shown; the label-free measures below carry the agreement.",
            "",
        ]
    free = report["label_free"]
    out += [
        "Label-free measures, each annotator against the others of the same image (regions as",
        "segments, labels ignored): probabilistic Rand index (PRI, higher is better), variation of",
        "information (VI, bits, lower is better), segmentation covering of the others (higher is better).",
        "",
    ]
    out += markdown_table(
        ["annotator", "PRI", "VI (bits)", "covering"],
        [["all", free["pri"], free["vi_bits"], free["covering"]]]
        + [[name, m["pri"], m["vi_bits"], m["covering"]] for name, m in free["per_annotator"].items()],
    )
    out.append("")
    if report["labelled"]:
        listed = report["per_label"][:LABELS_LISTED]
        out += [
            f"Specific agreement of the {len(listed)} most frequent labels: twice the matched pairs where both",
            "annotators chose the label, over the regions either gave it.",
            "",
        ]
        out += markdown_table(
            ["label", "regions", "specific agreement"],
            [[r["label"], r["regions"], r["specific_agreement"]] for r in listed],
        )
        out.append("")
    worst = report["worst_images"]
    measure = next(k for k in worst[0] if k != "image_id")
    out += [f"Images agreed on least ({measure}, mean over annotator pairs):", ""]
    out += markdown_table(["image_id", measure], [[r["image_id"], r[measure]] for r in worst])
    out.append("")
    if has_figure:
        out += ["![Agreement per label and the images agreed on least](results/agreement.png)", ""]
    return out


def _collection(stats: dict) -> list[str]:
    """The collection's figures (``results/collection.json``, ``regionbench.pipeline.collection``) over
    the reference annotator, and the label-frequency figure."""
    annotator = stats["annotator"]
    top = stats["label_histogram"][:20]
    train = stats["train_label_frequency"]
    out = [
        f"{stats['regions']} regions{f' by {annotator}' if annotator else ''} over {stats['images']} images: "
        f"{stats['regions_per_image']:.2f} regions per image, covering {100 * stats['coverage']:.2f} % of an image "
        f"on average; {stats['labels_used']} labels used, {stats['leaves_used']} of them leaves of the hierarchy.",
        "",
        "The most used labels (regions):",
        "",
    ]
    out += markdown_table(["label", "regions"], [[r["label"], r["regions"]] for r in top])
    out += [
        "",
        f"Left: regions per label. Right: how many of the {train['train_images']} training images of the image",
        f"split (subset {train['subset']}) show each label, in decreasing order: a few labels are frequent and",
        "most are rare, which is why the same few frequent labels for every image score well per image.",
        "",
        "![Regions per label and training images per label](results/collection.png)",
    ]
    return [*out, ""]


def _soft_confusions(report: dict) -> list[str]:
    """The paper's Table 6 from ``results/soft_confusions.json`` (``classifiers.soft_confusions``)."""
    if not report["pairs"]:
        return []
    out = [
        f"Test regions of subset {report['subset']} that the reference classifiers labelled wrongly by e_hard but",
        "within the hierarchy (e_hierarchy < 1), the most frequent pairs (the paper's Table 6):",
        "",
    ]
    out += markdown_table(
        ["correct", "predicted", "e_hierarchy", "regions", "classifiers"],
        [
            [r["label"], r["predicted"], r["e_hierarchy"], r["regions"], len(r["classifiers"])]
            for r in report["pairs"][:10]
        ],
    )
    return [*out, ""]


def _relations_parity(report: dict) -> list[str]:
    """One line per relation group from ``results/relations_parity.json``."""
    groups = report["groups"]
    shares = ", ".join(f"{g} {100 * groups[g]['agreement']:.2f} %" for g in ("topological", "horizontal", "vertical"))
    out = [
        f"Against the collection's own `spatial_rels` files ({report['pairs_compared']} pairs of "
        f"{report['images_compared']} images compared), the relations agree: {shares}."
    ]
    if report["files_not_used"]:
        out.append(
            f"{len(report['files_not_used'])} of those files could not be used; see `results/relations_parity.json`."
        )
    return [*out, ""]


def _introduction(folder: Path, manifest: dict) -> list[str]:
    """The title, a word on synthetic data, what the release holds (its subsets' split as the
    subsets stage made it: the collection's own, or the paper's 70/30) and how to load it."""
    out = ["", f"# regionbench {manifest['dataset']} v{manifest['version']}", ""]
    if manifest["synthetic"]:
        out += [
            "**Synthetic data.** The images and masks of this release were generated by `regionbench synth`",
            "(scenes drawn from the label vocabulary), not photographed or annotated by people: it exercises",
            "the pipeline and the tools, and no result on it says anything about real images.",
            "",
        ]
    subsets = has_subsets(manifest)
    out += [
        f"A region-annotated image benchmark {source(manifest).summary}, released by regionbench.",
        "Each region carries its label, its place in the label hierarchy, the 27 `saiapr27` features, a",
        "bounding box, its mask as COCO writes it and its exact polygon (WKB, GeoParquet). Spatial",
        "relations and the vocabulary complete it"
        + (
            (
                f", with subsets A-H whose test side is the collection's own {own['test']} split."
                if (own := _subsets_source_split(folder))
                else f", with subsets A-H whose test side, the collection's own {hidden['split']} split, is hidden (below)."
                if (hidden := manifest.get("hidden"))
                else ", with subsets A-H and their 70/30 train/test split."
            )
            if subsets
            else "; it has no subsets A-H (see below)."
        ),
        "`croissant.json` describes every field; `manifest.json` holds the checksums that",
        "`regionbench verify` checks.",
        "",
        *(
            [
                'With Hugging Face `datasets`, `load_dataset(<this folder>, "regions")` gives the regions of',
                "subsets A-H as `train` and `test` (the region split) and every annotator's regions as `full`;",
                '`"images"` gives the images by the image split, from the files under `hf/`; every other table',
                "with rows is one split, `full`.",
            ]
            if subsets
            else [
                'With Hugging Face `datasets`, `load_dataset(<this folder>, "regions")` gives every annotator\'s',
                'regions and `"images"` the images, each as one split, `full`; every other table with rows too.',
            ]
        ),
        "",
        *_hidden(manifest),
        *_source_section(manifest),
    ]
    return out


def _hidden(manifest: dict) -> list[str]:
    """For a public release of a hosted benchmark (its manifest's ``hidden``): what is hidden,
    what was left out, the private release it was made from and where the hidden side is scored."""
    hidden = manifest.get("hidden")
    if not hidden:
        return []
    private = hidden["private"]
    left_out = ", ".join(f"`{name}`" for name in hidden["left_out"]) or "none"
    return [
        "## Hidden test side",
        "",
        f"The truth of the `{hidden['split']}` split is hidden: its {hidden['images']} images are here (ids, files,",
        "sizes, pixel hashes) with nothing derived from their regions: no regions, masks, labels, features,",
        "relations, agreement, coverage or subsets rows, no label audit, no stage report, figure or baseline",
        "figure computed over the truth. The vocabulary counts the public regions only.",
        f"Tables whose hidden rows were left out: {left_out}.",
        "",
        f"Submissions on the hidden side are scored at {hidden['scored_at']}, against the private release",
        f"{private['dataset']} v{private['version']} (digest `{private['digest']}`), with `regionbench evaluate`.",
        f"The leak audit (`regionbench audit --leaks`) found {_leak_finding(hidden)} in this release.",
        "",
    ]


def _leak_finding(hidden: dict) -> str:
    """The leak audit's finding as the public card states it."""
    found = hidden.get("leaks")
    if found is None:
        return "nothing (it was not run)"
    return "no value of the hidden truth" if not found else f"{found} leaks"


def _said(text: str | None) -> str:
    """Text the config or the source's files gave, as the card shows it: HTML in it is shown as
    written, never rendered (a card is Markdown, which renders HTML)."""
    return html.escape(text or "", quote=False)


def _source_section(manifest: dict) -> list[str]:
    """Where the images come from, under which licence, and whether the release carries them."""
    origin = source(manifest)
    if manifest["synthetic"]:
        return []
    named = _said(origin.name) or "a collection that names itself nowhere in its files"
    out = ["## Source", "", f"- collection: {named}" + (f" ({_said(origin.url)})" if origin.url else "")]
    if origin.images_license is None:
        out.append(
            "- licence of the images: not stated by the source; this release names each image file by its path"
            " and does not carry it (set `source.license` in the build's config where it is known)"
        )
    else:
        out.append(f"- licence of the images: {_said(origin.images_license)}")
        held = "carry their bytes" if manifest.get("images") == "embedded" else "name them by path"
        out.append(f"- the image files under `hf/` {held}")
    if manifest["license"] == UNKNOWN:
        out.append(
            "- licence of this release: unknown: not stated by the source, and none set in the build's config"
            " (`release.license`)"
        )
    else:
        terms = "the source's terms, above" if manifest["license"] == OTHER else manifest["license"]
        out.append(f"- licence of this release's annotations: {terms}")
    return [*out, ""]


def _tables(manifest: dict, schemas: dict) -> list[str]:
    """Each table with its rows, key and content, then every field."""
    out = ["## Tables", ""]
    out += markdown_table(
        ["table", "rows", "key", "content"],
        [
            [f"`{entry['path']}`", entry["rows"], ", ".join(entry["key"]), schemas[name].document["description"]]
            for name, entry in manifest["tables"].items()
        ],
    )
    return [*out, "", *_fields(schemas)]


def _labels_only(folder: Path) -> list[str]:
    """A word on the raw folders released without masks, if any."""
    path = _results(folder, "ingest_report.json")
    folders = json.loads(path.read_text()).get("labels_only_folders") if path else None
    if not folders:
        return []
    return [
        f"**Labels only in {', '.join(folders)}.** These folders of the raw tree have no segmentation masks:",
        "their regions carry their labels and the official `features.txt` values, and no mask, box, polygon",
        "or spatial relation.",
        "",
    ]


def _branches(folder: Path) -> list[str]:
    if not (path := _results(folder, "branch_stats.parquet")):
        return []
    rows = pq.read_table(path).to_pylist()
    out = ["Regions per branch of the hierarchy:", ""]
    out += markdown_table(
        ["branch", "regions", "normalised", "descendants", "leaves"],
        [[r["branch"], r["frequency"], r["normalised_frequency"], r["descendants"], r["leaves"]] for r in rows],
    )
    return [*out, ""]


def _relations(folder: Path) -> list[str]:
    if not (path := _results(folder, "relation_stats.parquet")):
        return []
    rows = pq.read_table(path).to_pylist()
    out = [
        "Spatial relations over ordered region pairs: each group gives every pair one value, so a",
        "relation's share of its group's pairs sums to 1 per group; the normalised frequency is the",
        "paper's Table 3, a share of all relation values of the three groups.",
        "",
    ]
    out += markdown_table(
        ["group", "relation", "pairs", "share of the group's pairs", "normalised frequency"],
        [[r["group"], r["relation"], r["count"], r["share_of_pairs"], r["share"]] for r in rows],
    )
    out.append("")
    if _results(folder, "relation_stats.png"):
        out += ["![Shares of the spatial relations per group](results/relation_stats.png)", ""]
    return out


def _subsets_source_split(folder: Path) -> dict | None:
    """The subsets report's ``source_split`` (the collection's own split taken as their test
    side), or None where the subsets split as the paper does or there are none."""
    path = _results(folder, "subsets.json")
    return json.loads(path.read_text()).get("source_split") if path else None


def _subsets(folder: Path) -> list[str]:
    """Subsets A-H with both splits, or the one line saying why there are none."""
    if not (path := _results(folder, "subsets.json")):
        return []
    report = json.loads(path.read_text())
    if "skipped" in report:
        return [report["skipped"][0].upper() + report["skipped"][1:] + ".", ""]
    if own := report.get("source_split"):
        out = [
            f"Subsets (the paper's Table 5). The collection's own split is the release's: its {own['test']}",
            f"images are the test side and those of {', '.join(x for x in own['splits'] if x != own['test'])} the",
            "train side, for `split` and `image_split` alike; every task scores the test side by default.",
            "",
        ]
    else:
        out = [
            "Subsets (the paper's Table 5). Two splits serve different tasks. `split` is the region split",
            "of the paper's region split (70/30 within each label; an image may have regions on both",
            "sides): the region task scores the test regions. `image_split` puts every image on one side",
            "for all subsets, stratified over the images' label sets: image-level tasks (top-k labels,",
            "example and label based, ImageCLEF runs) score its test images, whose truth is every label",
            "of the subset they show.",
            "",
        ]
    out += markdown_table(
        ["subset", "labels", "regions", "train", "test", "images", "test images", "label test share"],
        [
            [
                k,
                len(s["labels"]),
                s["regions"],
                s["train"],
                s["test"],
                s["image_split"]["images"],
                s["image_split"]["test_images"],
                f"{s['image_split']['label_test_share_min']:.2f}-{s['image_split']['label_test_share_max']:.2f}",
            ]
            for k, s in report["subsets"].items()
        ],
    )
    return [*out, ""]


def _classifiers(folder: Path) -> list[str]:
    if not (path := _results(folder, "classifiers.parquet")):
        return []
    rows = pq.read_table(path).to_pylist()
    out = ["Reference classifiers, hard accuracy (e_hard: exact label) on the test split per subset:", ""]
    subsets = sorted({r["subset"] for r in rows})
    by = {(r["classifier"], r["subset"]): r["e_hard"] for r in rows}
    names = list(dict.fromkeys(r["classifier"] for r in rows))
    out += markdown_table(["classifier", *subsets], [[n, *(by.get((n, s), "") for s in subsets)] for n in names])
    out.append("")
    if _results(folder, "classifiers.png"):
        out += ["![Hard and soft accuracy of the classifiers over subsets A-H](results/classifiers.png)", ""]
    return out


# A baseline report's figures in the card's table, by task: (column, path in its measures);
# the humans' ceiling beside them (column, path in its human_ceiling), one figure for ODS and OIS.
BASELINE_FIGURES: dict[str, tuple[tuple[str, str], ...]] = {
    "segments": (
        ("covering ODS", "covering.ods"), ("covering OIS", "covering.ois"), ("PRI ODS", "pri.ods"),
        ("PRI OIS", "pri.ois"), ("VI ODS", "vi.ods"), ("VI OIS", "vi.ois"),
    ),
    "boundaries": (("boundary F ODS", "ods.f"), ("boundary F OIS", "ois.f"), ("boundary AP", "ap")),
    "semantic": (
        ("mIoU", "miou"), ("pixel accuracy", "pixel_accuracy"), ("iIoU", "iiou"), ("category IoU", "category_miou"),
        ("category iIoU", "category_iiou"),
    ),
    "instances": (("mask AP", "AP"), ("mask AP50", "AP50")),
    "panoptic": (("PQ", "all.pq"), ("PQ things", "things.pq"), ("PQ stuff", "stuff.pq")),
}  # fmt: skip
HUMAN_FIGURES: dict[str, tuple[tuple[str, str], ...]] = {
    "segments": (
        ("covering ODS", "covering"), ("covering OIS", "covering"), ("PRI ODS", "pri"), ("PRI OIS", "pri"),
        ("VI ODS", "vi"), ("VI OIS", "vi"),
    ),
    "boundaries": (("boundary F ODS", "f"), ("boundary F OIS", "f")),
}  # fmt: skip


def _at(values: object, path: str) -> float | None:
    for key in path.split("."):
        values = values.get(key) if isinstance(values, dict) else None
    return float(values) if isinstance(values, int | float) and not isinstance(values, bool) else None


SKIPPED = "skipped.json"  # a reference method's file in its folder when it could not run on the release


def skipped_methods(folder: Path) -> dict[str, str]:
    """Method -> why it did not run on the release, from the ``SKIPPED`` files of a baselines
    folder (the stage's output or a release's ``results/baselines``)."""
    return {
        path.parent.name: str(json.loads(path.read_text(encoding="utf-8"))["skipped"])
        for path in sorted(Path(folder).glob(f"*/{SKIPPED}"))
    }


def baseline_table(folder: Path, methods: Sequence[str] | None = None) -> tuple[list[str], list[list[object]]]:
    """The reference methods' figures from their reports (``folder/<method>/<task>.json``, of
    ``methods`` only when given): the header (method, then each figure a report holds, in
    ``BASELINE_FIGURES`` order) and a row a method, with the humans' ceiling first where a report
    has one (several annotators); a figure with an interval in its report is ``Bounded``. A figure
    a method was not scored by is blank. No reports: an empty header."""
    reports = {
        (path.parent.name, path.stem): json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(Path(folder).glob("*/*.json"))
        if (methods is None or path.parent.name in methods) and path.name != SKIPPED
    }
    rows: dict[str, dict[str, float]] = {}
    for (method, task), report in reports.items():
        intervals = report.get("intervals") or {}
        for column, path in BASELINE_FIGURES.get(task, ()):
            if (value := _at(report.get("measures"), path)) is not None:
                around = intervals.get(path) or {}
                if around.get("low") is not None:  # the figure with its interval
                    value = Bounded(value, around["low"], around["high"])
                rows.setdefault(method, {})[column] = value
        for column, path in HUMAN_FIGURES.get(task, ()):
            if (value := _at(report.get("human_ceiling"), path)) is not None:
                rows.setdefault("Human", {})[column] = value
    order = [column for figures in BASELINE_FIGURES.values() for column, _ in figures]
    header = [column for column in order if any(column in row for row in rows.values())]
    if not header:
        return [], []
    names = (["Human"] if "Human" in rows else []) + sorted(name for name in rows if name != "Human")
    return ["method", *header], [[name, *(rows[name].get(c, "") for c in header)] for name in names]


def _baselines(folder: Path) -> list[str]:
    header, rows = baseline_table(folder / "results" / "baselines")
    left = [f"{name} ({why})" for name, why in skipped_methods(folder / "results" / "baselines").items()]
    out = [f"Reference methods not run on this release: {'; '.join(left)}.", ""] if left else []
    if not header:
        return out
    out[:0] = [
        "Reference methods, scored by `regionbench evaluate` on the evaluation side (their reports under "
        "results/baselines/; `regionbench baselines` runs them again). Covering, PRI, F, AP and IoU: higher is "
        "better; VI: lower is better. Human: the humans' agreement, each scored against the others.",
        "",
        *markdown_table(header, rows),
        "",
    ]
    return out


def _statistics(folder: Path) -> list[str]:
    """The collection's figures, the stages' reports and the agreement between annotators."""
    out = ["## Statistics", "", *_labels_only(folder)]
    if path := _results(folder, "collection.json"):
        out += _collection(json.loads(path.read_text()))
    out += _branches(folder) + _relations(folder)
    if path := _results(folder, "relations_parity.json"):
        out += _relations_parity(json.loads(path.read_text()))
    out += _subsets(folder) + _classifiers(folder) + _baselines(folder)
    if path := _results(folder, "soft_confusions.json"):
        out += _soft_confusions(json.loads(path.read_text()))
    if (path := _results(folder, "agreement.json")) and len((report := json.loads(path.read_text()))["annotators"]) > 1:
        out += _agreement(report, has_figure=_results(folder, "agreement.png") is not None)
    if (path := _results(folder, "concepts.json")) and (report := json.loads(path.read_text()))["pairs"]:
        out += _concepts(report)
    return out


CONCEPT_FIGURES = ("cgF1", "pmF1", "IL_MCC", "cgF1@0.5", "cgF1@0.75")


def _concepts(report: dict) -> list[str]:
    """The humans' ceiling on the release's concepts (``scoring.tasks.concepts.human_ceiling``)."""
    side = f"the {report['split']} side" if report.get("split") else "every image"
    out = [
        "## Concepts: the human ceiling",
        "",
        f"The release as a promptable-concept benchmark (SA-Co's cgF1, `regionbench evaluate --task concepts`): "
        f"{counted(report['pairs'], '(image, phrase) pair')} of {side} ({report['negatives']:,} negatives), "
        "each annotated exhaustively by every annotator. Each annotator's regions, scored as a run against the "
        f"oracle over the others ({report['iou_type']}), give the ceiling a method is measured against:",
        "",
    ]
    rows = [["mean", *(report.get(f) for f in CONCEPT_FIGURES)]]
    rows += [[name, *(mine[f] for f in CONCEPT_FIGURES)] for name, mine in report["per_annotator"].items()]
    rows = [["none" if v is None else v for v in row] for row in rows]  # undefined (no positive pair, say)
    return [*out, *markdown_table(["annotator", *CONCEPT_FIGURES], rows), ""]


def _rejects(folder: Path, manifest: dict) -> list[str]:
    """The rejected raw items, counted by kind and reason."""
    rejects = pq.read_table(folder / manifest["tables"]["rejects"]["path"], columns=["item", "reason"])
    out = ["## Rejected input", ""]
    if rejects.num_rows:  # counted in Arrow: a hostile collection may reject a million items
        counts = rejects.group_by(["item", "reason"]).aggregate([([], "count_all")]).to_pylist()
        rows = sorted((c["item"], c["reason"], c["count_all"]) for c in counts)
        out += markdown_table(["item", "reason", "count"], [list(row) for row in rows])
    else:
        out.append("Every raw item was accepted; `data/rejects.parquet` is empty.")
    return [*out, ""]


def _audit(folder: Path) -> list[str]:
    """What the audits before publishing found: near-duplicate groups, where they lie."""
    out = ["## Audit", ""]
    found = _results(folder, "audit_duplicates.json")
    if found is None:
        off = "The near-duplicate audit was switched off for this build (`audit.duplicates.enabled`)."
        return [*out, off, "", *_label_audit(folder)]
    report = json.loads(found.read_text(encoding="utf-8"))
    subsets = json.loads(p.read_text()) if (p := _results(folder, "subsets.json")) else {}
    cut = subsets.get("near_duplicates", {}).get("groups_across_sides", 0)
    out += [
        f"Near-duplicate images (perceptual hashes within {report['threshold']} of 128 bits, "
        f"`data/audit_duplicates.parquet`): {counted(report['groups'], 'group')} of "
        f"{counted(report['images'], 'image')} among {report['images_hashed']:,}; the largest holds "
        f"{report['largest_group']:,}.",
        "",
    ]
    if subsets.get("subsets"):
        if cut:
            out.append(
                f"The collection's own split, which subsets A-H keep, puts {counted(cut, 'group')} on both of its sides: "
                "their images are listed with `image_split` in the table."
            )
        else:
            out.append(
                "Subsets A-H keep every group on one side of their split: no test image has a near-copy in train."
            )
    across = report["groups_across_source_splits"]
    if across:
        out.append(
            f"Groups with images in more than one of the collection's own splits (`split`), as the collection "
            f"distributes them: {across:,}. A score on one of those splits may have seen near-copies in another."
        )
    return [*out, "", *_label_audit(folder)]


LABEL_CANDIDATES_LISTED = 10


def _label_audit(folder: Path) -> list[str]:
    """The label-error candidates: how many, by which evidence, the likeliest."""
    found = _results(folder, "audit_labels.json")
    if found is None:
        return ["The label audit was switched off for this build (`audit.labels.enabled`).", ""]
    report = json.loads(found.read_text(encoding="utf-8"))
    if report.get("skipped"):
        return [f"No label audit: {report['skipped']}.", ""]
    if report.get("too_little"):
        return [
            f"Label audit of the {report['regions']:,} regions of subset H: {report['too_little']}; no region is listed.",
            "",
        ]
    out = [
        f"Label-error candidates (`data/audit_labels.parquet`, to review, nothing changed): {report['candidates']:,} "
        f"of the {report['regions']:,} regions of subset H: {report['by_classifier']:,} flagged by confident learning "
        f"on out-of-fold classifier probabilities, then {report['by_other_evidence']:,} that the other annotators and "
        f"their features speak against; {report['with_suggestion']:,} with a suggested label.",
        "",
    ]
    table = pq.read_table(
        folder / "data" / "audit_labels.parquet",
        columns=["rank", "image_id", "region_id", "label", "suggested_label", "score", "evidence"],
    )
    rows = [
        [
            r["rank"],
            r["image_id"],
            r["region_id"],
            _said(r["label"]),
            _said(r["suggested_label"] or ""),
            f"{r['score']:.2f}",
            _said(r["evidence"]),
        ]
        for r in table.sort_by("rank").slice(0, LABEL_CANDIDATES_LISTED).to_pylist()
    ]
    if rows:
        out += markdown_table(["rank", "image", "region", "label", "suggested", "score", "evidence"], rows)
    return [*out, ""]


def _conflicts(folder: Path) -> list[str]:
    """Nodes that ingest found under several parents."""
    out = ["## Known conflicts", ""]
    report = json.loads(p.read_text()) if (p := _results(folder, "ingest_report.json")) else {}
    conflicts = report.get("parent_conflicts", [])
    if conflicts:
        out.append("Nodes filed under several parents in `ontology_path.txt`; the majority parent is kept:")
        out.append("")
        out += markdown_table(
            ["node", "kept", "parents seen"],
            [[c["node"], c["chosen"], ", ".join(f"{p} ({n})" for p, n in c["parents"].items())] for c in conflicts],
        )
    else:
        out.append("None reported by ingest.")
    return [*out, ""]


def _responsible(folder: Path, manifest: dict) -> list[str]:
    """The Responsible-AI statements, word for word as croissant.json carries them (``rai``)."""
    out = [
        "## Responsible use",
        "",
        "The Responsible-AI fields of `croissant.json`, the same words; each says where it comes from.",
        "",
    ]
    for statement in rai.statements(folder, manifest):
        sources = ", ".join(f"`{s}`" for s in statement.sources)
        out.append(f"- **{statement.field}** ({sources}):")
        out += [f"  {_said(text)}" for text in statement.texts]
    return [*out, ""]


def _provenance(manifest: dict) -> list[str]:
    out = [
        "## Provenance",
        "",
        f"- code version: `{manifest['code_version']}`",
        f"- configuration sha256: `{manifest['config_sha256']}`",
        f"- raw inputs sha256: `{manifest['inputs_sha256']}`",
        f"- raw tree layout: {manifest.get('layout', 'saiapr')}",
    ]
    if manifest.get("previous"):
        prev = manifest["previous"]
        out.append(
            f"- previous release: v{prev['version']} (the records required a {prev['required_bump'].upper()} bump)"
        )
    return [*out, ""]


def _use_and_citation(manifest: dict) -> list[str]:
    example = (
        'train = release.subset("E", split="train")'
        if has_subsets(manifest)
        else "regions = release.regions  # every annotator's regions; there are no subsets A-H"
    )
    return [
        "## Use",
        "",
        "```python",
        "import regionbench",
        'release = regionbench.load("path/to/this/folder")  # or a git+DVC repository with rev=',
        example,
        "```",
        "",
        "## Citation",
        "",
        "```bibtex",
        source(manifest).citation.replace("```", "` ` `"),  # a fence in the text would end the block
        "```",
        "",
        "Cite the version with the digest of its `manifest.json`, which `regionbench verify` prints",
        "(this card is one of the files it seals, so it cannot hold it): a reader who checks",
        "`regionbench verify --expect DIGEST` or `regionbench.load(..., expect=DIGEST)` has the very",
        "release you used, not one edited and sealed again.",
        "",
    ]


def dataset_card(folder: Path, manifest: dict) -> str:
    """README.md of the release in ``folder`` (data and results already written): the front
    matter, then one section after another."""
    folder = Path(folder)
    schemas = load_schemas(folder / "schemas")
    sections = (
        _front_matter(folder, manifest),
        _introduction(folder, manifest),
        _tables(manifest, schemas),
        _statistics(folder),
        _rejects(folder, manifest),
        _audit(folder),
        _conflicts(folder),
        _responsible(folder, manifest),
        _provenance(manifest),
        _use_and_citation(manifest),
    )
    return "\n".join(line for section in sections for line in section)

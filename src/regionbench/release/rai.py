"""Responsible-AI statements of a release: Croissant's RAI vocabulary, filled from what the build knows.

Each statement is written from the release folder itself (its tables and stage reports) and,
for what no build can know (who is in the photographs, how the source gathered them), from the
config's ``release.statements``, which the manifest carries. ``croissant.json`` and the card are
both rendered from ``statements``: they say the same words. Each ``Statement`` names its
sources, a file of the release or a config key, so every sentence can be traced and checked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from regionbench.core import tables
from regionbench.core.numbers import counted

# What a release for publication must have said (the build cannot know who its images show),
# and what the refusal asks the maintainer to say.
REQUIRED_TO_PUBLISH = {
    "personal_sensitive_information": "say what personal or sensitive information the images hold "
    "(none; faces of passers-by; ...)",
}
REJECT_REASONS_LISTED = 3
CONSENSUS = tables.CONSENSUS  # the derived annotator (pipeline.consensus)


@dataclass(frozen=True)
class Statement:
    """One RAI field: its Croissant name, mlcroissant's attribute, its sentences, and where each
    comes from (release files such as ``data/rejects.parquet``, or ``config release.statements.X``)."""

    field: str
    attribute: str
    texts: tuple[str, ...]
    sources: tuple[str, ...]
    many: bool = True  # Croissant allows several values (else the sentences are joined)

    @property
    def value(self) -> list[str] | str:
        """The value mlcroissant's Metadata takes for the field."""
        return list(self.texts) if self.many else " ".join(self.texts)


def unset_for_publication(statements: dict[str, str | None]) -> list[str]:
    """The keys of ``REQUIRED_TO_PUBLISH`` that ``statements`` (release.statements) leaves unset."""
    return [key for key in REQUIRED_TO_PUBLISH if not (statements.get(key) or "").strip()]


def _counts(table: pa.Table, column: str) -> dict[str, int]:
    """Rows of ``table`` per value of ``column``, in value order."""
    counts = table.group_by(column).aggregate([([], "count_all")])
    return dict(sorted(zip(counts[column].to_pylist(), counts["count_all"].to_pylist(), strict=True)))


def config_key(key: str) -> str:
    return f"config release.statements.{key}"


class _Release:
    """What the statements read of a release folder, each file once."""

    def __init__(self, folder: Path, manifest: dict) -> None:
        self.folder, self.manifest = Path(folder), manifest
        self.said: dict[str, str] = {k: v for k, v in (manifest.get("statements") or {}).items() if v}
        self.reports: dict[str, dict | None] = {}

    def report(self, name: str) -> dict | None:
        """``results/<name>`` (a stage report) as JSON, read once; None where the build made none."""
        if name not in self.reports:
            path = self.folder / "results" / name
            self.reports[name] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        return self.reports[name]

    def table(self, name: str, columns: list[str]) -> pa.Table:
        return pq.read_table(self.folder / self.manifest["tables"][name]["path"], columns=columns)

    def rows(self, name: str) -> int:
        return int(self.manifest["tables"].get(name, {}).get("rows", 0))

    @cached_property
    def regions(self) -> pa.Table:
        """The regions' ``annotator``, ``label`` and ``drawn_by`` (a release made before the
        column has none), read once."""
        path = self.folder / self.manifest["tables"]["regions"]["path"]
        wanted = [c for c in ("annotator", "label", "drawn_by") if c in pq.read_schema(path).names]
        return pq.read_table(path, columns=wanted)

    @cached_property
    def drawers(self) -> dict[str, int]:
        """Regions per ``drawn_by`` (human, model:..., consensus, derived:...); none for a release
        made before the column."""
        if "drawn_by" not in self.regions.column_names:
            return {}
        return _counts(self.regions, "drawn_by")

    @cached_property
    def annotators(self) -> tuple[dict[str, int], dict[str, int]]:
        """Regions per annotator, and images each annotator covered."""

        return _counts(self.regions, "annotator"), _counts(self.table("coverage", ["annotator"]), "annotator")

    def add_said(self, key: str, texts: list[str], sources: list[str]) -> None:
        """The maintainer's own words for ``key``, after what the build found."""
        if key in self.said:
            texts.append(self.said[key].strip())
            sources.append(config_key(key))


def _collection(r: _Release) -> Statement:
    m, images = r.manifest, r.rows("images")
    given = m.get("source") or {}
    texts, sources = [], ["data/images.parquet", "manifest.json source"]
    if m["synthetic"]:
        texts.append(
            f"Generated by regionbench synth, not photographs: {counted(images, 'image')} drawn by the program "
            f"with every annotator's region masks, written in the {m.get('layout', 'saiapr')} layout and read back "
            "as a collected tree is."
        )
    else:
        name = given.get("name") or "the collection"
        home = f" ({given['homepage']})" if given.get("homepage") else ""
        texts.append(
            f"The images and region annotations of {name}{home}, read as its files distribute them "
            f"({m.get('layout', 'saiapr')} layout): {counted(images, 'image')} accepted, "
            f"{counted(r.rows('rejects'), 'raw item')} rejected with a reason (data/rejects.parquet)."
        )
        sources.append("data/rejects.parquet")
        if "data_collection" not in r.said:
            texts.append(
                "How the source gathered its images is not stated in this release (release.statements.data_collection)."
            )
    r.add_said("data_collection", texts, sources)
    return Statement("rai:dataCollection", "data_collection", tuple(texts), tuple(sources), many=False)


def _collection_type(r: _Release) -> Statement:
    if "data_collection_type" in r.said:
        return Statement(
            "rai:dataCollectionType",
            "data_collection_type",
            (r.said["data_collection_type"].strip(),),
            (config_key("data_collection_type"),),
        )
    # Croissant RAI's own values: a generated collection is made by software; a collected one is
    # an existing collection re-read, whose own gathering is the source's to state.
    kind = "Others: generated by software (regionbench synth)" if r.manifest["synthetic"] else "Secondary Data Analysis"
    return Statement("rai:dataCollectionType", "data_collection_type", (kind,), ("manifest.json synthetic",))


def _annotation(r: _Release) -> tuple[Statement, ...]:
    """How the regions were annotated (Croissant's dataAnnotationProtocol), and the annotators an image has (Croissant's annotationsPerItem)."""
    regions, covered = r.annotators
    humans = sorted(set(covered) | (set(regions) - {CONSENSUS}))
    listed = "; ".join(
        f"{name}: {counted(regions.get(name, 0), 'region')} on {counted(covered.get(name, 0), 'image')} covered"
        for name in humans
    )
    texts = [f"{counted(len(humans), 'annotator')} drew the regions ({listed})."]
    sources = ["data/regions.parquet", "data/coverage.parquet"]
    if drawers := r.drawers:
        by = ", ".join(f"{kind} {counted(n, 'region')}" for kind, n in drawers.items())
        texts.append(f"Who or what drew them (regions.drawn_by): {by}.")
    report = r.report("agreement.json") or {}
    if (coverage := report.get("coverage")) and len(humans) > 1:
        sources.append("results/agreement.json")
        if coverage["complete"]:
            texts.append(f"Every annotator covered all {counted(coverage['images'], 'image')}.")
        else:
            by = ", ".join(
                f"{counted(n, 'image')} by {counted(int(k), 'annotator')}"
                for k, n in sorted(coverage["images_by_annotators"].items(), key=lambda kv: int(kv[0]))
            )
            texts.append(f"Coverage: {by}; an annotator who did not cover an image is not counted on it.")
    if CONSENSUS in regions:
        texts.append(
            f"The {counted(regions[CONSENSUS], 'region')} of `{CONSENSUS}` are derived, not drawn: per image the "
            f"annotators' regions are matched one to one at IoU >= {report.get('min_iou', 0.5)}, a cluster drawn "
            "by more than half of the annotators who covered the image becomes a region, its mask by "
            f"{report.get('consensus', 'majority')} vote of the cluster's masks, its label the cluster's most "
            "frequent one."
        )
    if "matched_share" in report:
        figures = [
            f"{100 * report['matched_share']:.1f} % of regions matched one to one",
            f"mean IoU {report['mean_iou']:.3f}",
        ]
        if report.get("labelled"):
            figures += [
                f"same label {100 * report['exact_label']:.1f} %",
                f"pixel Cohen's kappa {report['pixel_kappa']:.3f}",
                f"Fleiss' kappa {report['fleiss_kappa']:.3f}",
                f"Krippendorff's alpha {report['krippendorff_alpha']:.3f}",
            ]
        free = report["label_free"]
        figures += [f"PRI {free['pri']:.3f}", f"VI {free['vi_bits']:.3f} bits", f"covering {free['covering']:.3f}"]
        texts.append(f"Agreement between annotators over {report['image_pairs']:,} image pairs: {', '.join(figures)}.")
    elif len(humans) < 2:
        texts.append("With one annotator no agreement between annotators can be measured.")
    models = sorted(kind.removeprefix("model:") for kind in r.drawers if kind.startswith("model:"))
    if models:
        texts.append(f"Masks a model made: {', '.join(models)} (the config's drawn_by), not a person.")
    images = max(r.rows("images"), 1)
    per_item = f"{r.rows('coverage') / images:.2f} annotators per image (data/coverage.parquet)"
    return (
        Statement("rai:dataAnnotationProtocol", "data_annotation_protocol", tuple(texts), tuple(sources)),
        Statement(
            "rai:annotationsPerItem", "annotations_per_item", (per_item,), ("data/coverage.parquet",), many=False
        ),
    ) + (
        (Statement("rai:machineAnnotationTools", "machine_annotation_tools", tuple(models), ("data/regions.parquet",)),)
        if models
        else ()
    )


def _preprocessing(r: _Release) -> Statement:
    stages = [
        "ingest (every raw item read and checked: accepted, or rejected with its reason)",
        "the label vocabulary and its hierarchy",
        "27 features and the spatial relations of each region",
    ]
    regions, _ = r.annotators
    if len(set(regions) - {CONSENSUS}) > 1:
        stages.append("agreement between annotators" + (" and their consensus" if CONSENSUS in regions else ""))
    sources = ["manifest.json tables", "data/rejects.parquet"]
    subsets = r.report("subsets.json")
    if r.rows("subsets"):
        stages.append(f"subsets A-H with a stratified train/test split (seed {subsets['seed'] if subsets else 0})")
        sources.append("results/subsets.json")
    if r.report("audit_duplicates.json") is not None or r.report("audit_labels.json") is not None:
        stages.append("the audits for near-copies and label errors")
    if (r.folder / "results" / "classifiers.csv").is_file():
        stages.append("the reference classifiers")
    stages.append("the release: rows sorted by key, each table checked against its JSON Schema")
    texts = [f"Stages, in order: {'; '.join(stages)}."]
    rejects = r.table("rejects", ["item", "stage", "reason"])
    if rejects.num_rows:
        groups = rejects.group_by(["stage", "item"]).aggregate([([], "count_all")]).to_pylist()
        kinds = ", ".join(
            f"{counted(g['count_all'], g['item'])} at {g['stage']}"
            for g in sorted(groups, key=lambda g: (-g["count_all"], g["stage"], g["item"]))
        )
        reasons = rejects.group_by("reason").aggregate([([], "count_all")]).to_pylist()
        top = sorted(reasons, key=lambda g: (-g["count_all"], g["reason"]))[:REJECT_REASONS_LISTED]
        said = "; ".join(f"{g['reason']} ({g['count_all']:,})" for g in top)
        texts.append(f"Rejected: {counted(rejects.num_rows, 'raw item')} ({kinds}); the commonest reasons: {said}.")
    else:
        texts.append("No raw item was rejected (data/rejects.parquet is empty).")
    return Statement("rai:dataPreprocessingProtocol", "data_preprocessing_protocol", tuple(texts), tuple(sources))


def _imbalance(r: _Release) -> tuple[str, str] | None:
    """The class imbalance of the reference annotator's regions (all regions without subsets)."""
    subsets = r.report("subsets.json") or {}
    regions = r.regions.select(["annotator", "label"])
    reference = subsets.get("reference_annotator")
    if reference:
        regions = regions.filter(pc.equal(regions["annotator"], reference))
    counts = regions.drop_null().group_by("label").aggregate([([], "count_all")])
    if counts.num_rows < 2:
        return None
    n = sorted(counts["count_all"].to_pylist(), reverse=True)
    top = counts.sort_by([("count_all", "descending"), ("label", "ascending")])["label"][0].as_py()
    whose = f"{reference}'s regions" if reference else "all regions"
    return (
        f"Class imbalance ({whose}): {len(n):,} labels; the most frequent, `{top}`, holds "
        f"{100 * n[0] / sum(n):.1f} % of the regions; the median label {n[len(n) // 2]:,}, the rarest "
        f"{n[-1]:,}: a ratio of {n[0] / n[-1]:.1f} between the most and the least frequent.",
        "data/regions.parquet",
    )


def _biases(r: _Release) -> Statement:
    texts, sources = [], []
    if found := _imbalance(r):
        texts.append(found[0])
        sources.append(found[1])
    duplicates = r.report("audit_duplicates.json")
    if duplicates is None:
        texts.append(
            "Near-copies were not looked for (audit.duplicates.enabled off): a test image may have a copy in train."
        )
        sources.append("manifest.json files")
    elif not duplicates["groups"]:
        texts.append(f"No near-copies among the {counted(duplicates['images_hashed'], 'image')} (perceptual hashes).")
        sources.append("results/audit_duplicates.json")
    else:
        sides = (r.report("subsets.json") or {}).get("near_duplicates", {}).get("groups_across_sides", 0)
        texts.append(
            f"Near-copies: {counted(duplicates['groups'], 'group')} of {counted(duplicates['images'], 'image')} "
            f"(perceptual hashes within {duplicates['threshold']} bits); "
            f"{counted(duplicates['groups_across_source_splits'], 'group')} span the collection's own splits"
            + (f", {counted(sides, 'group')} both sides of the split of subsets A-H." if r.rows("subsets") else ".")
        )
        sources += ["results/audit_duplicates.json", "data/audit_duplicates.parquet"]
    r.add_said("data_biases", texts, sources)
    return Statement("rai:dataBiases", "data_biases", tuple(texts), tuple(sources))


def _limitations(r: _Release) -> Statement:
    m, texts, sources = r.manifest, [], []
    if m["synthetic"]:
        texts.append(
            "The images are generated: a figure measured on them says how a method behaves on this generator, "
            "not on photographs."
        )
        sources.append("manifest.json synthetic")
    audit = r.report("audit_labels.json")
    if audit is None:
        texts.append("Labels were not audited (audit.labels.enabled off).")
        sources.append("manifest.json files")
    elif audit.get("skipped"):
        texts.append(f"Labels were not audited: {audit['skipped']}.")
        sources.append("results/audit_labels.json")
    elif audit.get("too_little"):
        texts.append(f"The label audit judged no region: {audit['too_little']}.")
        sources.append("results/audit_labels.json")
    else:
        texts.append(
            f"{counted(audit['candidates'], 'region')} of the {audit['regions']:,} of subset H are label-error "
            "candidates (data/audit_labels.parquet), listed for review and not changed."
        )
        sources += ["results/audit_labels.json", "data/audit_labels.parquet"]
    if not m["synthetic"]:
        given = m.get("source") or {}
        unstated = [what for key, what in (("license", "licence for its images"), ("citation", "citation"),
                    ("homepage", "home page")) if not given.get(key)]  # fmt: skip
        if unstated:
            texts.append(f"The source states no {', no '.join(unstated)} (the config's source: section sets them).")
            sources.append("manifest.json source")
    r.add_said("data_limitations", texts, sources)
    return Statement("rai:dataLimitations", "data_limitations", tuple(texts), tuple(sources))


def _use_cases(r: _Release) -> Statement:
    labels = r.regions["label"]
    labelled = pc.count_distinct(labels).as_py() > 1
    uses = []
    if labelled:
        uses += [
            "instance segmentation and detection (regionbench evaluate --task instances: COCO's AP over masks, "
            "boxes and boundaries)",
            "semantic segmentation (--task semantic: mIoU and pixel accuracy by the collection's own rules)",
            "panoptic segmentation (--task panoptic: PQ, SQ, RQ)",
        ]
    uses.append(
        "segmentation without labels (--task segments: covering, PRI, VI; --task boundaries: boundary F and AP)"
    )
    sources = ["data/regions.parquet"]
    if r.rows("subsets"):
        uses.append(
            "region and image labelling on subsets A-H (--task region, --task image), beside the reference classifiers"
        )
        sources.append("data/subsets.parquet")
    texts = [f"Scoring {use}." for use in uses]
    r.add_said("data_use_cases", texts, sources)
    return Statement("rai:dataUseCases", "data_use_cases", tuple(texts), tuple(sources))


def _personal(r: _Release) -> Statement:
    key = "personal_sensitive_information"
    if key in r.said:
        return Statement("rai:personalSensitiveInformation", key, (r.said[key].strip(),), (config_key(key),))
    if r.manifest["synthetic"]:
        text = "None: the images are drawn by a program and show no person."
    else:
        text = (
            "Not stated by the maintainer (release.statements.personal_sensitive_information): photographs may "
            "show people; check before redistributing the images."
        )
    return Statement("rai:personalSensitiveInformation", key, (text,), ("manifest.json synthetic", config_key(key)))


def _maintenance(r: _Release) -> Statement:
    m = r.manifest
    after = f", after v{m['previous']['version']}" if m.get("previous") else ""
    texts = [
        f"This is v{m['version']}{after}. Versions are semantic (MAJOR when a record is removed or changed, MINOR "
        f"when records are only added, PATCH otherwise), each tagged {m['dataset']}-vX.Y.Z and rebuilt byte for "
        "byte from its tag by regionbench reproduce; regionbench verify FOLDER --expect DIGEST checks a copy "
        "against the digest its manifest.json seals."
    ]
    sources = ["manifest.json version", "manifest.json previous"]
    r.add_said("maintenance_plan", texts, sources)
    return Statement(
        "rai:dataReleaseMaintenancePlan", "data_release_maintenance_plan", tuple(texts), tuple(sources), False
    )


def statements(folder: Path, manifest: dict) -> list[Statement]:
    """The RAI statements of the release in ``folder`` (its tables and results written), in
    the order the card shows them. ``manifest``: its manifest so far (``statements``: the
    config's ``release.statements``)."""
    r = _Release(folder, manifest)
    out = [
        _collection(r),
        _collection_type(r),
        *_annotation(r),
        _preprocessing(r),
        _biases(r),
        _limitations(r),
        _use_cases(r),
        _personal(r),
        _maintenance(r),
    ]
    if "data_social_impact" in r.said:
        key = "data_social_impact"
        out.append(Statement("rai:dataSocialImpact", key, (r.said[key].strip(),), (config_key(key),), many=False))
    return out

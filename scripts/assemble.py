"""Rule assemble: stage outputs -> results/<dataset>/assembled/, the release's checked tables (against the
previous release and this version as published) before its results, card and Croissant are added."""

import json
from functools import partial
from pathlib import Path

from regionbench import release
from regionbench.audit import duplicates, labels
from regionbench.client import history
from regionbench.core import splits as own_splits
from regionbench.core import tables
from regionbench.pipeline import source
from regionbench.pipeline.jobs import fail, log_to

log = log_to(snakemake.log[0])
inp, params = snakemake.input, snakemake.params


def shards(paths: list[str]) -> list:
    """One part per shard file, read when the release writer gets to it."""
    return [partial(tables.read_parquet, p) for p in paths]


def region_part(regions: str, features: str):
    return release.regions_table(tables.read_parquet(regions), tables.read_parquet(features), splits, params.drawn_by)


def audit_table():
    """The near-duplicate groups with each image's splits and subsets (empty when the audit is off)."""
    if not inp.duplicate_groups:
        return duplicates.release_table(
            duplicates.GROUPS.empty_table(), tables.IMAGES.empty_table(), tables.SUBSETS.empty_table()
        )
    groups = tables.read_parquet(inp.duplicate_groups[0])
    images = tables.concat([tables.read_parquet(p, ["image_id", "split"]) for p in inp.images])
    return duplicates.release_table(
        groups, images, tables.read_parquet(inp.subsets, ["subset", "image_id", "image_split"])
    )


# The config says who or what drew an annotator's regions: it must name annotators the tree has.
annotators = {a for p in inp.coverage for a in tables.read_parquet(p, ["annotator"])["annotator"].to_pylist()}
if unknown := sorted(set(params.drawn_by) - annotators):
    fail(
        f"config drawn_by names {unknown[0]!r}, an annotator the raw tree does not have "
        f"(it has {', '.join(sorted(annotators))}); name one of those, or remove it"
    )
# The subsets hold a row per region and subset, more than the regions: read and handed over by row group.
splits = release.region_splits(Path(inp.subsets))
data = {
    "images": shards(inp.images),
    "rejects": shards(inp.rejects),
    "relations": shards(inp.relations),
    "agreement": shards(inp.agreement),
    "coverage": shards(inp.coverage),
    "image_labels": tables.read_parquet(inp.image_labels),
    "vocabulary": tables.read_parquet(inp.vocabulary),
    "source_categories": tables.read_parquet(inp.source_categories),
    "subsets": release.file_parts(Path(inp.subsets)),
    "regions": [partial(region_part, r, f) for r, f in zip(inp.regions, inp.features, strict=True)],
}
data["audit_duplicates"] = audit_table()
data["audit_labels"] = tables.read_parquet(inp.label_audit[0]) if inp.label_audit else labels.AUDIT.empty_table()
found = json.loads(Path(inp.source).read_text(encoding="utf-8"))
source_files = found.pop("files", [])
# The split the collection's benchmark is scored on, decided here once for every reader of the release.
annotated = {i for p in inp.regions for i in tables.read_parquet(p, ["image_id"])["image_id"].to_pylist()}
split_of = {}
for path in inp.images:
    shard = tables.read_parquet(path, ["image_id", "split"])
    split_of.update(zip(shard["image_id"].to_pylist(), shard["split"].to_pylist(), strict=True))
evaluation_split = own_splits.evaluation_split(
    (split_of.get(i) for i in annotated), params.test_split, params.evaluation_splits
)
embed = source.embeds(found, params.images)
provenance = release.Provenance(
    dataset=params.dataset,
    version=params.version,
    license=source.resolved_license(params.license, params.synthetic, found.get("license")),
    code_version=params.code,
    config_sha256=params.config_sha256,
    # Hashed first, by forked workers while this process is small (2.3 GB at paper scale).
    inputs_sha256=release.fingerprint_tree(Path(params.root), workers=snakemake.threads),
    synthetic=params.synthetic,
    layout=params.layout,
    date=params.date,
    creator=params.creator,
    source=found,
    images="embedded" if embed else "paths",
    statements={key: text for key, text in params.statements.items() if text},
    evaluation_split=evaluation_split,
    source_files=source_files,
)
try:
    previous = history.previous_release(params.previous, params.dataset, params.version)
    out = Path(params.folder)
    # This version built here before (a folder with its manifest), else as tagged before.
    published = out if (out / "manifest.json").is_file() else history.published_release(params.dataset, params.version)
    log.info("release %s v%s, previous: %s", params.dataset, provenance.version, previous or "none")
    manifest = release.assemble(
        Path(snakemake.output[0]),
        data,
        {},
        provenance,
        previous=previous,
        published=published,
        embed_images_from=Path(params.root) if embed else None,
        workers=snakemake.threads,
    )
except release.ReleaseError as exc:
    fail(f"release refused: {exc}")
for name, entry in manifest["tables"].items():
    log.info("%s: %d rows, content %s", name, entry["rows"], entry["content_sha256"][:16])

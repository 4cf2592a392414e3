"""Croissant 1.1 metadata of a release: one FileObject per file, one RecordSet per table.

Built with mlcroissant's own classes, so the document is what its validator understands. Every
field reads one Parquet column; its description and type come from the table's JSON Schema, so
the two cannot drift. The train/test split is a field typed as a Croissant split that references
the ``splits`` RecordSet.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import mlcroissant as mlc
import rdflib

from regionbench.release import rai
from regionbench.release.card import Source, source
from regionbench.release.manifest import ReleaseError, is_spdx, sha256_file
from regionbench.release.schemas import TABLES, load_schemas
from regionbench.release.versions import tag_name

CONFORMS_TO = "http://mlcommons.org/croissant/1.1"
NO_LICENCE = "unknown: not stated by the source, and none set in the build's config"
INT32, TEXT = mlc.DataType.INT32, mlc.DataType.TEXT
DATA_TYPES = {
    "int32": INT32,
    "int64": mlc.DataType.INT64,
    "double": mlc.DataType.FLOAT64,
    "string": TEXT,
    "bool": mlc.DataType.BOOL,
    "binary": TEXT,
    "list<int64>": mlc.DataType.INT64,  # a list of them: the field is an array
    "list<string>": TEXT,
}
# The geometry column's WKB, typed as GeoSPARQL's literal for it beside the text mlcroissant reads.
WKB = "http://www.opengis.net/ont/geosparql#wkbLiteral"
# Columns that name a record of another table: (table, column) -> the key field they reference.
REFERENCES = {
    ("regions", "image_id"): "images/image_id",
    ("regions", "label_id"): "vocabulary/label_id",
    ("relations", "image_id"): "images/image_id",
    ("subsets", "image_id"): "images/image_id",
    ("agreement", "image_id"): "images/image_id",
    ("coverage", "image_id"): "images/image_id",
    ("image_labels", "image_id"): "images/image_id",
    ("image_labels", "label_id"): "vocabulary/label_id",
}


def _source(ctx: mlc.Context, file_id: str, column: str, json_path: str | None = None) -> mlc.Source:
    """Where a field's values are: ``column`` of the Parquet file ``file_id``, optionally one key of it."""
    transforms = [mlc.Transform(ctx=ctx, json_path=json_path)] if json_path else []
    return mlc.Source(ctx=ctx, file_object=file_id, extract=mlc.Extract(ctx=ctx, column=column), transforms=transforms)


def _rle_parts(ctx: mlc.Context, table: str, column: str, file_id: str) -> list[mlc.Field]:
    """The sub-fields of a COCO RLE struct column: size [height, width] and counts."""
    parts = {"size": (INT32, "[height, width] of the mask"), "counts": (TEXT, "COCO compressed RLE counts")}
    return [
        mlc.Field(
            ctx=ctx,
            id=f"{table}/{column}/{name}",
            name=name,
            description=text,
            data_types=[kind],
            **({"is_array": True, "array_shape": "2"} if name == "size" else {}),
            source=_source(ctx, file_id, column, json_path=name),
        )
        for name, (kind, text) in parts.items()
    ]


def _field(ctx: mlc.Context, table: str, column: str, spec: dict, file_id: str) -> mlc.Field:
    """The Croissant field of one column, typed and described by its JSON Schema property."""
    field_id = f"{table}/{column}"
    if spec["x-arrow-type"] == "rle":
        return mlc.Field(
            ctx=ctx,
            id=field_id,
            name=column,
            description=spec["description"],
            data_types=[TEXT],
            sub_fields=_rle_parts(ctx, table, column, file_id),
        )
    data_types, target = [DATA_TYPES[spec["x-arrow-type"]]], REFERENCES.get((table, column))
    if spec["x-arrow-type"] == "binary":
        data_types.append(rdflib.URIRef(WKB))
    if table != "images" and column in ("split", "image_split"):  # images.split is the source's own
        data_types, target = [*data_types, mlc.DataType.SPLIT], "splits/name"
    return mlc.Field(
        ctx=ctx,
        id=field_id,
        name=column,
        description=spec["description"],
        data_types=data_types,
        source=_source(ctx, file_id, column),
        **({"references": mlc.Source(ctx=ctx, field=target)} if target else {}),
        **({"is_array": True, "array_shape": "-1"} if spec["x-arrow-type"].startswith("list<") else {}),
    )


def _splits(ctx: mlc.Context) -> mlc.RecordSet:
    """The split RecordSet the split fields reference: its records are written inline."""
    return mlc.RecordSet(
        ctx=ctx,
        id="splits",
        name="splits",
        description="The splits of subsets A-H: 70 % train, 30 % test within each label.",
        data_types=[mlc.DataType.SPLIT],
        key=["splits/name"],
        fields=[mlc.Field(ctx=ctx, id="splits/name", name="name", data_types=[TEXT])],
        data=[{"splits/name": "train"}, {"splits/name": "test"}],
    )


def metadata(folder: Path, manifest: dict) -> mlc.Metadata:
    """The Croissant metadata of the release in ``folder`` (its data files already written).

    Parameters: ``folder``, the release folder being assembled; ``manifest``, its manifest so
    far (tables with their paths, dataset, version, licence, creator, date, synthetic).
    Returns the ``mlcroissant`` Metadata; its ``ctx.issues`` holds what mlcroissant found wrong.
    """
    folder = Path(folder)
    ctx = mlc.Context(conforms_to=CONFORMS_TO)
    schemas = load_schemas(folder / "schemas")
    files, record_sets = [], [_splits(ctx)]
    for name in TABLES:
        rel = manifest["tables"][name]["path"]
        files.append(
            mlc.FileObject(
                ctx=ctx,
                id=rel,
                name=rel,
                description=f"the {name} table (Parquet)",
                content_url=rel,
                encoding_formats=["application/x-parquet"],
                sha256=sha256_file(folder / rel),
            )
        )
        doc = schemas[name].document
        record_sets.append(
            mlc.RecordSet(
                ctx=ctx,
                id=name,
                name=name,
                description=doc["description"],
                key=[f"{name}/{k}" for k in schemas[name].key],
                fields=[_field(ctx, name, c, spec, rel) for c, spec in doc["properties"].items()],
            )
        )
    dataset = manifest["dataset"]
    origin = source(manifest)
    responsible = {s.attribute: s.value for s in rai.statements(folder, manifest)}
    return mlc.Metadata(
        ctx=ctx,
        name=f"regionbench-{dataset}",
        description=(
            ("Synthetic (generated by regionbench synth, not photographs) " if manifest["synthetic"] else "")
            + f"region-annotated image benchmark '{dataset}' {origin.summary}, built by regionbench: images, "
            "regions with labels, features, masks and polygons, spatial relations, the label vocabulary and "
            "hierarchy, and subsets A-H with their train/test split." + _hidden_sentence(manifest)
        ),
        version=manifest["version"],
        # The release's licence (its annotations), and the images' own where the source states it.
        license=(
            ([f"https://spdx.org/licenses/{manifest['license']}.html"] if is_spdx(manifest["license"]) else [])
            + (
                [origin.images_license]
                if origin.images_license and origin.images_license != manifest["license"]
                else []
            )
        )
        or [NO_LICENCE],  # stated nowhere: said, none claimed
        creators=[mlc.Organization(ctx=ctx, name=manifest["creator"])],
        date_published=datetime.datetime.fromisoformat(manifest["date"]),
        url=origin.url,
        cite_as=origin.citation,
        keywords=["image annotation", "region labelling", "segmentation", origin.keyword, "benchmark"],
        distribution=files,
        record_sets=record_sets,
        extra_properties=_lineage(manifest, origin),
        **responsible,
    )


PROV = "http://www.w3.org/ns/prov#"


def _hidden_sentence(manifest: dict) -> str:
    """For a public release of a hosted benchmark: its hidden side and where it is scored."""
    hidden = manifest.get("hidden")
    if not hidden:
        return ""
    return (
        f" The truth of its {hidden['split']} split ({hidden['images']} images) is hidden: those images come without "
        f"regions, labels or anything derived from them, and submissions on them are scored at {hidden['scored_at']} "
        f"against the private release (digest {hidden['private']['digest']})."
    )


def _lineage(manifest: dict, origin: Source) -> dict:
    """PROV-O lineage: the build that generated the release, and what it was derived from,
    always the raw collection (``urn:sha256:`` and the inputs fingerprint: its files' digest,
    docs/releases.md), then the source's home page where one is known (``origin.url``; not for a
    generated collection) and the previous version's tag where there is one."""
    derived = (
        [f"urn:sha256:{manifest['inputs_sha256']}"]
        + ([origin.url] if origin.url and not manifest["synthetic"] else [])
        + ([tag_name(manifest["dataset"], manifest["previous"]["version"])] if manifest.get("previous") else [])
        + ([f"urn:sha256:{manifest['hidden']['private']['digest']}"] if manifest.get("hidden") else [])
    )
    return {"prov:wasGeneratedBy": f"regionbench {manifest['code_version']}", "prov:wasDerivedFrom": derived}


def croissant(folder: Path, manifest: dict) -> dict:
    """The Croissant JSON-LD document of the release in ``folder``, as ``metadata`` serialises it.

    Raises ``ReleaseError`` naming what mlcroissant finds wrong (an error or a warning): a
    release never carries metadata its own validator questions.
    """
    try:
        meta = metadata(folder, manifest)
    except mlc.ValidationError as exc:  # mlcroissant raises on errors, and only records warnings
        raise ReleaseError(f"croissant.json: mlcroissant finds {' '.join(str(exc).split())}") from None
    if warnings := sorted(meta.ctx.issues.warnings):
        raise ReleaseError(f"croissant.json: mlcroissant warns: {'; '.join(warnings)}")
    document = meta.to_json()
    document["@context"]["prov"] = PROV  # the lineage's vocabulary, which mlcroissant's context lacks
    # schema.org's isBasedOn, which mlcroissant's Metadata does not model: the original benchmark.
    if based_on := source(manifest).based_on:
        document["isBasedOn"] = based_on
    return document

"""Croissant 1.1 metadata of a release: one FileObject per file, one RecordSet per table.

Every field reads one Parquet column; its description and type come from the table's JSON
Schema, so the two cannot drift. The train/test split is a field typed as a Croissant split
(``wd:Q3985153``) that references the ``splits`` RecordSet.
"""

from __future__ import annotations

import json
from pathlib import Path

from regionbench.release.manifest import sha256_file
from regionbench.release.schemas import TABLES, load_schemas

CONFORMS_TO = "http://mlcommons.org/croissant/1.1"
DATA_TYPES = {
    "int32": "cr:Int32",
    "int64": "cr:Int64",
    "double": "cr:Float64",
    "string": "sc:Text",
    "bool": "sc:Boolean",
    "binary": "sc:Text",
}
SPLIT_TYPE = "wd:Q3985153"
# Columns that name a record of another table: (table, column) -> the key field they reference.
REFERENCES = {
    ("regions", "image_id"): "images/image_id",
    ("regions", "label_id"): "vocabulary/label_id",
    ("relations", "image_id"): "images/image_id",
    ("subsets", "image_id"): "images/image_id",
    ("agreement", "image_id"): "images/image_id",
    ("image_labels", "image_id"): "images/image_id",
    ("image_labels", "label_id"): "vocabulary/label_id",
}
ORIGINAL = "https://www.imageclef.org/SIAPRdata"  # the home of SAIAPR TC-12, whose recipe is followed
CITATION = (
    "@article{escalante2010saiapr, title={The segmented and annotated {IAPR} {TC-12} benchmark}, "
    "author={Escalante, Hugo Jair and Hern{\\'a}ndez, Carlos A. and Gonzalez, Jesus A. and "
    "L{\\'o}pez-L{\\'o}pez, A. and Montes, Manuel and Morales, Eduardo F. and Sucar, L. Enrique and "
    "Villase{\\~n}or, Luis and Grubinger, Michael}, journal={Computer Vision and Image Understanding}, "
    "volume={114}, number={4}, pages={419--428}, year={2010}}"
)


def context() -> dict:
    return {
        "@language": "en",
        "@vocab": "https://schema.org/",
        "arrayShape": "cr:arrayShape",
        "citeAs": "cr:citeAs",
        "column": "cr:column",
        "conformsTo": "dct:conformsTo",
        "containedIn": "cr:containedIn",
        "cr": "http://mlcommons.org/croissant/",
        "rai": "http://mlcommons.org/croissant/RAI/",
        "data": {"@id": "cr:data", "@type": "@json"},
        "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
        "dct": "http://purl.org/dc/terms/",
        "examples": {"@id": "cr:examples", "@type": "@json"},
        "equivalentProperty": "cr:equivalentProperty",
        "extract": "cr:extract",
        "field": "cr:field",
        "fileProperty": "cr:fileProperty",
        "fileObject": "cr:fileObject",
        "fileSet": "cr:fileSet",
        "format": "cr:format",
        "includes": "cr:includes",
        "isArray": "cr:isArray",
        "isLiveDataset": "cr:isLiveDataset",
        "jsonPath": "cr:jsonPath",
        "key": "cr:key",
        "md5": "cr:md5",
        "parentField": "cr:parentField",
        "path": "cr:path",
        "recordSet": "cr:recordSet",
        "references": "cr:references",
        "regex": "cr:regex",
        "repeated": "cr:repeated",
        "replace": "cr:replace",
        "samplingRate": "cr:samplingRate",
        "sc": "https://schema.org/",
        "separator": "cr:separator",
        "source": "cr:source",
        "subField": "cr:subField",
        "transform": "cr:transform",
        "wd": "https://www.wikidata.org/wiki/",
    }


def _rle_parts(table: str, column: str, file_id: str) -> list[dict]:
    """The sub-fields of a COCO RLE struct column: size [height, width] and counts."""
    parts = {"size": ("cr:Int32", "[height, width] of the mask"), "counts": ("sc:Text", "COCO compressed RLE counts")}
    return [
        {
            "@type": "cr:Field",
            "@id": f"{table}/{column}/{name}",
            "name": name,
            "description": text,
            "dataType": kind,
            **({"isArray": True, "arrayShape": "2"} if name == "size" else {}),
            "source": {"fileObject": {"@id": file_id}, "extract": {"column": column}, "transform": {"jsonPath": name}},
        }
        for name, (kind, text) in parts.items()
    ]


def _field(table: str, column: str, spec: dict, file_id: str) -> dict:
    out = {
        "@type": "cr:Field",
        "@id": f"{table}/{column}",
        "name": column,
        "description": spec["description"],
    }
    if spec["x-arrow-type"] == "rle":
        return {**out, "dataType": "sc:Text", "subField": _rle_parts(table, column, file_id)}
    out["dataType"] = DATA_TYPES[spec["x-arrow-type"]]
    out["source"] = {"fileObject": {"@id": file_id}, "extract": {"column": column}}
    if column in ("split", "image_split"):
        out["dataType"] = [out["dataType"], SPLIT_TYPE]
        out["references"] = {"field": {"@id": "splits/name"}}
    elif (table, column) in REFERENCES:
        out["references"] = {"field": {"@id": REFERENCES[table, column]}}
    return out


def _splits() -> dict:
    return {
        "@type": "cr:RecordSet",
        "@id": "splits",
        "name": "splits",
        "description": "The splits of subsets A-H: 70 % train, 30 % test within each label.",
        "dataType": "cr:Split",
        "key": {"@id": "splits/name"},
        "field": [{"@type": "cr:Field", "@id": "splits/name", "name": "name", "dataType": "sc:Text"}],
        "data": [{"splits/name": "train"}, {"splits/name": "test"}],
    }


def croissant(folder: Path, manifest: dict) -> dict:
    """The Croissant document of the release in ``folder`` (its data files already written)."""
    folder = Path(folder)
    schemas = load_schemas(folder / "schemas")
    files, record_sets = [], [_splits()]
    for name in TABLES:
        rel = manifest["tables"][name]["path"]
        files.append(
            {
                "@type": "cr:FileObject",
                "@id": rel,
                "name": rel,
                "description": f"the {name} table (Parquet)",
                "contentUrl": rel,
                "encodingFormat": "application/x-parquet",
                "sha256": sha256_file(folder / rel),
            }
        )
        doc = schemas[name].document
        record_sets.append(
            {
                "@type": "cr:RecordSet",
                "@id": name,
                "name": name,
                "description": doc["description"],
                "key": [{"@id": f"{name}/{k}"} for k in schemas[name].key],
                "field": [_field(name, c, spec, rel) for c, spec in doc["properties"].items()],
            }
        )
    dataset = manifest["dataset"]
    return {
        "@context": context(),
        "@type": "sc:Dataset",
        "name": f"regionbench-{dataset}",
        "description": (
            ("Synthetic (generated by regionbench synth, not photographs) " if manifest["synthetic"] else "")
            + f"region-annotated image benchmark '{dataset}' built by regionbench after the segmented and "
            "annotated IAPR TC-12 benchmark (SAIAPR TC-12): images, regions with labels, features, masks "
            "and polygons, spatial relations, the label vocabulary and hierarchy, and subsets A-H with "
            "their train/test split."
        ),
        "conformsTo": CONFORMS_TO,
        "version": manifest["version"],
        "license": f"https://spdx.org/licenses/{manifest['license']}.html",
        "creator": {"@type": "sc:Organization", "name": manifest["creator"]},
        **({"datePublished": manifest["date"]} if manifest["date"] else {}),
        # A synthetic collection is not the original benchmark: it only follows its recipe.
        **({} if manifest["synthetic"] else {"url": ORIGINAL}),
        "isBasedOn": ORIGINAL,
        "citeAs": CITATION,
        "keywords": ["image annotation", "region labelling", "segmentation", "SAIAPR TC-12", "benchmark"],
        "distribution": files,
        "recordSet": record_sets,
    }


def read(folder: Path) -> dict:
    return json.loads((Path(folder) / "croissant.json").read_text(encoding="utf-8"))

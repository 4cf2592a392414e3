"""Writing a release folder: the stage tables assembled, checked, diffed and written once.

Determinism is owned here: rows are sorted by each table's primary key, Parquet goes through
``tables.write_parquet_parts`` (zstd, fixed row groups, no pandas metadata), JSON through
``tables.write_json`` (sorted keys), and nothing records a time or an absolute path
(docs/releases.md).
"""

from __future__ import annotations

import errno
import json
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from regionbench.core import tables
from regionbench.core.forked import forked_map
from regionbench.release import card as card_module
from regionbench.release import huggingface
from regionbench.release.geoparquet import geo_metadata
from regionbench.release.manifest import (
    FORMAT,
    DamagedAssembly,
    Provenance,
    ReleaseError,
    canonical_digest,
    file_digests,
    read_manifest,
    sealed_contents,
)
from regionbench.release.records import Part, as_parts, conformed_parts, release_parts, scan, scan_tables
from regionbench.release.schemas import SCHEMA_DIR, TABLES, conform, load_schemas
from regionbench.release.versions import Diff, check_bump, diff_tables, parse_version

LARGEST = ("relations", "regions", "subsets")  # the tables with a row per region or pair of regions


def region_splits(subsets: Path) -> pa.Table:
    """Each region's one split and image split over subsets A-H (key columns, ``split`` and
    ``image_split``), read from the subsets Parquet file ``subsets`` row group by row group.

    The subsets hold a row per region and subset, so their string columns are coded part by part
    as integers (a code never changes: new values are appended) and grouped on the codes: a
    group-by over the strings themselves held 450 MiB at 118k images."""
    columns = [*tables.REGION_KEY, "split", "image_split"]
    values: dict[str, list[str]] = {}
    coded = []
    for part in tables.read_parquet_parts(subsets, columns):
        for index, name in enumerate(columns):
            if pa.types.is_string(part.schema.field(name).type):
                known = values.setdefault(name, [])
                known += sorted(set(pc.unique(part[name]).drop_null().to_pylist()) - set(known))
                part = part.set_column(index, name, pc.index_in(part[name], value_set=pa.array(known, pa.string())))
        coded.append(part.group_by(columns, use_threads=False).aggregate([]))
    if not coded:  # no subsets: no row group to read
        return pq.read_schema(subsets).empty_table().select(columns)
    splits = pa.concat_tables(coded).group_by(columns, use_threads=False).aggregate([])
    if len(splits.group_by(tables.REGION_KEY).aggregate([])) != len(splits):
        raise ReleaseError("a region is in train for one subset and in test for another; the subsets must nest")
    for name, known in values.items():
        index = splits.schema.get_field_index(name)
        splits = splits.set_column(index, name, pa.array(known, pa.string()).take(splits[name]))
    return splits.select(columns)


def regions_table(
    regions: pa.Table, features: pa.Table, splits: pa.Table, drawn_by: Mapping[str, str] | None = None
) -> pa.Table:
    """Ingested regions with their 27 features, their split (null outside subsets A-H;
    ``splits`` comes from ``region_splits``) and who or what drew them (``drawn_by``: annotator ->
    ``model:NAME@VERSION`` or ``derived:HOW``, the config's; any other annotator is ``human``, the
    derived consensus ``consensus``)."""
    if features.num_rows != regions.num_rows:
        raise ReleaseError(
            f"features cover {features.num_rows} regions of {regions.num_rows}; rerun the features stage"
        )
    # Arrow joins carry no struct column (the mask): join the rest, then take the masks by row.
    rest = regions.drop_columns(["mask"]).append_column("_row", pa.array(range(regions.num_rows), pa.int64()))
    # Only this part's images' splits: a join builds its hash table over the right side, and the
    # whole collection's splits for every shard made the release grow as shards x regions.
    splits = splits.filter(pc.is_in(splits["image_id"], value_set=pc.unique(regions["image_id"])))
    joined = rest.join(features, tables.REGION_KEY, join_type="left outer").join(
        splits, tables.REGION_KEY, join_type="left outer"
    )
    joined = joined.sort_by([(k, "ascending") for k in tables.REGION_KEY])
    masks = regions["mask"].take(joined["_row"])
    names = pc.unique(joined["annotator"])
    kinds = pa.array([drawer(a, drawn_by or {}) for a in names.to_pylist()], pa.string())
    drawers = kinds.take(pc.index_in(joined["annotator"], value_set=names))
    return joined.drop_columns(["_row"]).append_column("drawn_by", drawers).append_column("mask", masks)


def drawer(annotator: str, drawn_by: Mapping[str, str]) -> str:
    """The ``drawn_by`` of an annotator's regions: the config's word for it, ``consensus`` for
    the derived annotator, else ``human``."""
    return "consensus" if annotator == tables.CONSENSUS else drawn_by.get(annotator, "human")


def read_tables(folder: Path) -> dict[str, pa.Table]:
    return {name: pq.read_table(Path(folder) / "data" / f"{name}.parquet") for name in TABLES}


def _largest_first() -> list[str]:
    """``TABLES`` in the order workers take them: the largest first, so none is left last."""
    return sorted(TABLES, key=lambda name: name not in LARGEST)


def _check(
    parts: Mapping[str, list[Part]],
    schemas: dict,
    version: str,
    previous: Path | None,
    published: Path | None,
    workers: int = 1,
) -> tuple[dict, Diff | None, dict | None]:
    """Every check a release passes before anything is written: each table against its schema
    (its parts read by ``workers`` processes), the version against ``published`` (the same tables) and
    against ``previous`` (the bump the record diff needs). Returns the scans, the diff and the
    previous manifest (None without)."""
    scans = scan_tables(parts, schemas, conformed=True, workers=workers)
    problems = [p for name in TABLES for p in scans[name].problems]
    if problems:
        raise ReleaseError("tables break their schemas:\n" + "\n".join(problems))
    parse_version(version)
    if published is not None:
        before, sealed = release_parts(published), sealed_contents(published)

        def content(name: str) -> str:  # the sealed hash where the file is as sealed, else read
            return sealed.get(name) or scan(before[name], schemas[name], validate=False, workers=workers).content_sha256

        differing = [name for name in TABLES if name not in before or content(name) != scans[name].content_sha256]
        if differing:
            raise ReleaseError(
                f"version {version} exists with other content in {', '.join(differing)}; a version is "
                "immutable: raise release.version (regionbench diff OLD NEW shows the bump needed)"
            )
    if previous is None:
        return scans, None, None
    previous_manifest = read_manifest(previous)
    conformed = {name: conformed_parts(parts[name], schemas[name]) for name in TABLES}
    known = sealed_contents(previous)  # a table whose content hash is unchanged is not diffed
    same = {name for name in TABLES if known.get(name) == scans[name].content_sha256}
    diff = diff_tables(release_parts(previous), conformed, schemas, same=same)
    check_bump(previous_manifest["version"], version, diff)
    return scans, diff, previous_manifest


def _stage(
    staging: Path,
    parts: Mapping[str, list[Part]],
    scans: dict,
    schemas: dict,
    results: Mapping[str, Path],
    schema_dir: Path,
    embed_images_from: Path | None,
    workers: int = 1,
    layout: str = "saiapr",
) -> None:
    """Write the tables, their Hugging Face views, the stage results and the schemas (in the
    words of ``layout``) into the new folder ``staging``; ``workers`` processes write the
    Parquet files."""
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "data").mkdir(parents=True)

    def write(name: str) -> None:
        schema = schemas[name]
        conformed: Iterator[pa.Table] = (conform(part(), schema) for part in parts[name])
        if not scans[name].in_order:
            conformed = iter([conform(tables.concat([part() for part in parts[name]]), schema)])
        meta = geo_metadata(scans[name].geo_extents) if name == "regions" else None
        path, rows = staging / "data" / f"{name}.parquet", tables.rows_per_group(name)
        tables.write_parquet_parts(conformed, schema.arrow, path, meta, rows)

    forked_map(write, _largest_first(), workers)
    huggingface.write_views(staging, embed_images_from, workers)
    for rel, src in sorted(results.items()):
        (staging / "results" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, staging / "results" / rel)
    for name in TABLES:
        (staging / "schemas").mkdir(exist_ok=True)
        _write_schema(Path(schema_dir) / f"{name}.schema.json", staging / "schemas" / f"{name}.schema.json", layout)


def _write_schema(source: Path, out: Path, layout: str) -> None:
    """A table schema as the release carries it: its columns described in the words of the
    raw tree's ``layout`` where it has its own (``io.layouts.About.fields``)."""
    from regionbench.io import layouts  # a build's concern: the writer runs in the build

    document = json.loads(source.read_text(encoding="utf-8"))
    words = layouts.get(layout).about.fields
    table = document["title"].rsplit(": ", 1)[-1]
    for column, spec in document["properties"].items():
        spec["description"] = words.get(f"{table}.{column}", spec["description"])
    out.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _manifest(
    provenance: Provenance, scans: dict, schemas: dict, diff: Diff | None, previous_manifest: dict | None
) -> dict:
    """The manifest before its files are listed and sealed: provenance, the previous release and
    the bump its records needed, and per table its path, rows, key and content hash."""
    return {
        "format": FORMAT,
        "dataset": provenance.dataset,
        "version": provenance.version,
        "license": provenance.license,
        "code_version": provenance.code_version,
        "config_sha256": provenance.config_sha256,
        "inputs_sha256": provenance.inputs_sha256,
        "synthetic": provenance.synthetic,
        "layout": provenance.layout,
        "date": provenance.date,
        "creator": provenance.creator,
        "source": provenance.source,
        "images": provenance.images,
        "evaluation_split": provenance.evaluation_split,
        "source_files": provenance.source_files or [],
        "statements": dict(sorted((provenance.statements or {}).items())),
        "previous": None
        if previous_manifest is None or diff is None
        else {"version": previous_manifest["version"], "required_bump": diff.required},
        **({"hidden": provenance.hidden} if provenance.hidden is not None else {}),
        "tables": {
            name: {
                "path": f"data/{name}.parquet",
                "rows": scans[name].rows,
                "key": schemas[name].key,
                "content_sha256": scans[name].content_sha256,
            }
            for name in TABLES
        },
    }


def _seal(staging: Path, manifest: dict, workers: int = 1, known: Mapping[str, str] | None = None) -> dict:
    """List every file's sha256 under ``staging`` (hashed by up to ``workers`` processes; those
    in ``known`` hashed there already), seal the manifest with its digest and write it:
    ``staging`` then opens as a release (``client.loader.Release``)."""
    manifest["files"] = file_digests(staging, workers, known)
    manifest["digest"] = canonical_digest(manifest)
    tables.write_json(staging / "manifest.json", manifest, escape_non_ascii=False)
    return manifest


def _move_into_place(staging: Path, out: Path) -> None:
    """``staging`` renamed ``out``. The version as built before (same tables, checked when it was
    assembled) is replaced only once the new folder is whole: at every moment one complete folder
    exists under a known name."""
    replaced = out.with_name(out.name + ".replaced")
    shutil.rmtree(replaced, ignore_errors=True)
    if out.exists():
        out.rename(replaced)
    staging.rename(out)
    shutil.rmtree(replaced, ignore_errors=True)


# Linux's FICLONE ioctl: a copy-on-write clone of a whole file (Btrfs, XFS, bcachefs).
_FICLONE = 0x40049409


def _copy(source: Path, target: Path) -> None:
    """``target`` a copy of ``source`` that nothing written into ``source`` afterwards reaches: a
    copy-on-write clone where the file system makes them (no second copy of a paper-scale table
    on disk), else a plain copy. Never a hard link: one inode would let a byte written under
    ``results/`` change a sealed release."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(source, "rb") as src, open(target, "wb") as dst:
        try:
            import fcntl

            fcntl.ioctl(dst.fileno(), _FICLONE, src.fileno())
        except (ImportError, OSError):
            shutil.copyfileobj(src, dst, 1 << 20)


def assemble(
    folder: Path,
    data: Mapping[str, pa.Table | Sequence[Part]],
    results: Mapping[str, Path],
    provenance: Provenance,
    *,
    previous: Path | None = None,
    published: Path | None = None,
    schema_dir: Path = SCHEMA_DIR,
    embed_images_from: Path | None = None,
    workers: int = 1,
) -> dict:
    """Check the tables and write them into ``folder``, a release without its card and
    Croissant document, sealed so that it opens as one: what the stages that score a release
    (the baselines) read before it is published. Returns its manifest.

    ``data`` maps every name of ``TABLES`` to its table, or to its parts in key order (see
    ``scan``); ``results`` maps a file name under ``results/`` to the stage output to copy.
    Every table is checked against its schema, and with ``previous`` (an earlier release folder)
    the version bump against the record diff, before anything is written. A version is
    immutable: with ``published`` (this version as built or tagged before) every table's content
    must be the same, else nothing is written and the differing tables are named.
    ``embed_images_from`` (the raw root) puts the image files' bytes into the Hugging Face
    image files (``huggingface.write_views``). Up to ``workers`` processes check the tables and
    write and hash the files; the folder is the same for any number.
    """
    folder = Path(folder)
    schemas = load_schemas(schema_dir)
    parts = {name: as_parts(data[name]) for name in TABLES}
    scans, diff, previous_manifest = _check(parts, schemas, provenance.version, previous, published, workers)
    staging = folder.with_name(folder.name + ".partial")
    _stage(staging, parts, scans, schemas, results, schema_dir, embed_images_from, workers, provenance.layout)
    manifest = _seal(staging, _manifest(provenance, scans, schemas, diff, previous_manifest), workers)
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)
    return manifest


def publish(
    assembled: Path,
    out: Path,
    results: Mapping[str, Path],
    card: Callable[[Path, dict], str] | None = None,
    croissant: Callable[[Path, dict], dict] | None = None,
    workers: int = 1,
) -> dict:
    """The release folder ``out`` made from the ``assembled`` one (its files copied: ``_copy``)
    with ``results`` added under ``results/`` (file name -> stage output), then Croissant and the
    card rendered from the folder and the manifest so far (``regionbench.release.croissant`` and
    ``regionbench.release.card`` by default), the manifest sealed and the folder moved into place
    whole. Every file is hashed again (by up to ``workers`` processes): the manifest seals the
    bytes the release holds. Returns the manifest. (Rendered in
    this process: workers forked from it now, holding the release's tables, would count its pages
    again in the job's memory.)"""
    assembled, out = Path(assembled), Path(out)
    try:
        draft = read_manifest(assembled)
    except ReleaseError as exc:
        raise DamagedAssembly(f"the assembled release cannot be read ({exc})") from None
    assembled_files = draft.pop("files")
    draft.pop("digest")
    staging = out.with_name(out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        copied = _copied(assembled, assembled_files, staging, workers)
        for rel, src in sorted(results.items()):
            if (staging / "results" / rel).exists():
                raise ReleaseError(f"results/{rel} is given twice: by the assembled release and by {src}")
            (staging / "results" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, staging / "results" / rel)
        if croissant is None:
            from regionbench.release.croissant import croissant as render  # the build's: mlcroissant

            croissant = render
        document = croissant(staging, draft)
        tables.write_json(staging / "croissant.json", document, escape_non_ascii=False)
        (staging / "README.md").write_text((card or card_module.dataset_card)(staging, draft), encoding="utf-8")
        written = {"croissant.json", "README.md"}  # rendered here, over any the assembled folder held
        manifest = _seal(staging, draft, workers, known={k: v for k, v in copied.items() if k not in written})
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)  # nothing half-published is left behind
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            raise ReleaseError(
                f"{out.parent}: no space left on its device while publishing {out.name}; free some and run the same "
                "command again"
            ) from None
        raise
    _move_into_place(staging, out)
    return manifest


def _copied(assembled: Path, files: Mapping[str, str], staging: Path, workers: int) -> dict[str, str]:
    """The assembled release's ``files`` (path -> the sha256 its assembly sealed) copied into
    ``staging`` and hashed there: what it publishes is what was checked and sealed. Returns the
    digests; a file missing, unreadable or other than sealed is a ``DamagedAssembly`` naming it."""
    for rel in files:
        try:
            _copy(assembled / rel, staging / rel)
        except FileNotFoundError:
            raise DamagedAssembly(f"{assembled / rel}: missing from the assembled release") from None
        except IsADirectoryError:
            raise DamagedAssembly(f"{assembled / rel}: a folder where the assembled release had a file") from None
    found = file_digests(staging, workers)
    for rel, digest in files.items():
        if found.get(rel) != digest:
            raise DamagedAssembly(f"{assembled / rel}: not the file the assembly sealed (changed since it was written)")
    return found


def write_release(
    out: Path,
    data: Mapping[str, pa.Table | Sequence[Part]],
    results: Mapping[str, Path],
    provenance: Provenance,
    *,
    previous: Path | None = None,
    published: Path | None = None,
    card: Callable[[Path, dict], str] | None = None,
    croissant: Callable[[Path, dict], dict] | None = None,
    schema_dir: Path = SCHEMA_DIR,
    embed_images_from: Path | None = None,
    workers: int = 1,
) -> dict:
    """Write the release folder ``out`` and return its manifest: ``assemble`` then ``publish``
    in one step (the build runs them as two rules, the baselines scored between them).

    ``data`` maps every name of ``TABLES`` to its table, or to its parts in key order (see
    ``scan``); ``results`` maps a file name under ``results/`` to the stage output to copy.
    Every table is checked against its schema, and with ``previous`` (an earlier release folder)
    the version bump against the record diff, before anything is written. A version is
    immutable: with ``published`` (this version as built or tagged before) every table's content
    must be the same, else nothing is written and the differing tables are named. The folder is
    assembled beside ``out`` and moved into place whole. ``card`` and ``croissant`` render
    README.md and croissant.json from the folder and the manifest so far
    (``regionbench.release.card`` and ``regionbench.release.croissant`` by default).
    ``embed_images_from`` (the raw root) puts the image files' bytes into the Hugging Face
    image files (``huggingface.write_views``). Up to ``workers`` processes check the tables and
    write the Hugging Face files; the folder is the same for any number.
    """
    out = Path(out)
    assembled = out.with_name(out.name + ".assembled")
    assemble(
        assembled,
        data,
        results,
        provenance,
        previous=previous,
        published=published,
        schema_dir=schema_dir,
        embed_images_from=embed_images_from,
        workers=workers,
    )
    try:
        return publish(assembled, out, {}, card, croissant, workers)
    finally:
        shutil.rmtree(assembled, ignore_errors=True)

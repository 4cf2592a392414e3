"""``regionbench.load``: a release as pandas tables, from a folder or a git+DVC repository at a rev.

From a repository, the release folder is fetched once through ``dvc.api.DVCFileSystem`` into a
cache folder named by repository, rev and path, and read from there; the tables themselves are
read lazily, on first use.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from regionbench import release
from regionbench.core import errors, geometry, tables
from regionbench.release import query


def _table(name: str) -> cached_property[pd.DataFrame]:
    """A ``Release`` attribute: its table ``name``, read on first use and kept."""
    return cached_property(lambda self: self.table(name))


class Release:
    """A release folder: ``.images``, ``.regions``, ``.relations``, ``.vocabulary``, ``.subsets``,
    ``.rejects`` (pandas DataFrames read on first use), ``.manifest``, ``.subset()``, ``.mask()``."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        # Set once the folder verified: from then on every table read is checked against the
        # manifest, so a file changed after the verification is never read (``verified``).
        self.check_reads = False
        self.manifest = release.read_manifest(self.folder)
        self.version = self.manifest["version"]
        self.dataset = self.manifest["dataset"]

    def __repr__(self) -> str:
        return f"Release({self.dataset!r}, v{self.version}, {str(self.folder)!r})"

    def table(self, name: str, columns: list[str] | None = None, filters: Any = None) -> pd.DataFrame:
        """The table ``name`` as a DataFrame (only ``columns`` and the rows ``filters`` keep, when
        given: pyarrow's filters, e.g. ``[("image_id", "in", ids)]``)."""
        frame: pd.DataFrame = self.arrow(name, columns, filters).to_pandas()
        return frame

    def arrow(self, name: str, columns: list[str] | None = None, filters: Any = None) -> pa.Table:
        """The table ``name`` as Arrow, its types as released (only ``columns`` and the rows
        ``filters`` keep, when given; a filter skips the row groups it excludes); once the release
        verified, its bytes are checked against the manifest first (hashed again only where the
        file's size, times or inode changed since)."""
        if name not in self.manifest["tables"]:
            raise release.ReleaseError(f"{self.folder}: no table {name!r}; tables: {sorted(self.manifest['tables'])}")
        rel = self.manifest["tables"][name]["path"]
        path = self.folder / rel
        try:
            if self.check_reads:
                self._check_file(path, rel)
            return pq.read_table(path, columns=columns, filters=filters)
        except (OSError, pa.ArrowException) as exc:
            raise release.ReleaseError(
                f"{path}: unreadable ({errors.first_line(exc)}); run regionbench verify on the release"
            ) from None

    def image_regions(self, ids: list[int], annotator: str, columns: list[str]) -> pd.DataFrame:
        """``annotator``'s regions of the images ``ids`` (only ``columns``), in the file's order:
        only the row groups whose image_id bounds meet ``ids`` are read, and the last one read
        is kept decoded, so a run of batches of images that fall in one row group decodes it
        once (a filtered read decodes every row group it cannot rule out, masks included, again
        for every batch: 32 times over a 2,000-image release of one row group)."""
        rel = self.manifest["tables"]["regions"]["path"]
        path = self.folder / rel
        if self.check_reads:
            self._check_file(path, rel)
        wanted = sorted({"image_id", "annotator", *columns})
        try:
            file = pq.ParquetFile(path)
            where = file.schema_arrow.get_field_index("image_id")
            low, high = min(ids, default=0), max(ids, default=-1)
            pieces = []
            for group in range(file.metadata.num_row_groups):
                stats = file.metadata.row_group(group).column(where).statistics
                if stats is not None and stats.has_min_max and (stats.max < low or stats.min > high):
                    continue
                rows = self._row_group(file, rel, group, tuple(wanted))
                chosen = pc.and_(pc.is_in(rows["image_id"], pa.array(ids, rows.schema.field("image_id").type)),
                                 pc.equal(rows["annotator"], annotator))  # fmt: skip
                pieces.append(rows.filter(chosen).select(columns))
        except (OSError, pa.ArrowException) as exc:
            raise release.ReleaseError(
                f"{path}: unreadable ({errors.first_line(exc)}); run regionbench verify on the release"
            ) from None
        table = pa.concat_tables(pieces) if pieces else file.schema_arrow.empty_table().select(columns)
        frame: pd.DataFrame = table.to_pandas()
        return frame

    def _row_group(self, file: pq.ParquetFile, rel: str, group: int, columns: tuple[str, ...]) -> pa.Table:
        """Row group ``group`` of the table file ``rel`` (its ``columns``), the last one asked for
        kept decoded."""
        key = (rel, group, columns)
        kept = self.__dict__.get("_kept_group")
        if kept is None or kept[0] != key:
            kept = (key, file.read_row_group(group, columns=list(columns)))
            self.__dict__["_kept_group"] = kept
        table: pa.Table = kept[1]
        return table

    def _check_file(self, path: Path, rel: str) -> None:
        """``path`` has the sha256 the manifest lists for ``rel``: hashed once, and again where
        its size, modification or change time or inode changed; a ``ReleaseError`` otherwise."""
        stat = path.stat()
        seen = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)  # ctime: no one sets it back
        checked = self.__dict__.setdefault("_checked", {})
        if checked.get(rel) == seen:
            return
        if release.sha256_file(path) != self.manifest["files"].get(rel):
            raise release.ReleaseError(
                f"{path}: changed since the release was verified (sha256 differs from manifest.json); "
                "fetch the release again, or run regionbench verify on it"
            )
        checked[rel] = seen

    images = _table("images")
    regions = _table("regions")
    relations = _table("relations")
    vocabulary = _table("vocabulary")
    subsets = _table("subsets")
    rejects = _table("rejects")

    def subset(self, name: str, split: str | None = None) -> pd.DataFrame:
        """The regions (with features) of subset ``name`` (A-H), optionally one split only."""
        members = self.subsets[self.subsets["subset"] == name]
        if members.empty:
            raise release.ReleaseError(f"no subset {name!r}; subsets: {sorted(self.subsets['subset'].unique())}")
        if split is not None:
            if split not in ("train", "test"):
                raise release.ReleaseError(f"split {split!r}: use 'train' or 'test'")
            members = members[members["split"] == split]
        keys = members[tables.REGION_KEY]
        return self.regions.merge(keys, on=tables.REGION_KEY).reset_index(drop=True)

    def annotators(self) -> list[str]:
        """Every annotator with regions in the release, in name order."""
        return list(self._annotators)

    @cached_property
    def _annotators(self) -> tuple[str, ...]:
        return tuple(sorted(self.table("regions", columns=["annotator"])["annotator"].unique()))

    @property
    def reference_annotator(self) -> str | None:
        """Whose regions the subsets hold (the only annotator, or the consensus)."""
        names = sorted(self.subsets["annotator"].unique())
        if names:
            return str(names[0])
        annotators = self.annotators()
        return annotators[0] if annotators else None

    def regions_of(self, annotator: str | None = None) -> pd.DataFrame:
        """The regions of one annotator (default: the reference annotator)."""
        name = annotator or self.reference_annotator
        if name not in self.annotators():
            raise release.ReleaseError(f"no annotator {name!r}; annotators: {self.annotators()}")
        return self.regions[self.regions["annotator"] == name].reset_index(drop=True)

    def mask(self, image_id: int, region_id: int, annotator: str | None = None) -> np.ndarray:
        """The region's boolean mask (image height x width), decoded from its COCO RLE ``mask``; the
        annotator defaults to the reference annotator."""
        annotator = annotator or self.reference_annotator
        r = self.regions
        hit = r[(r["image_id"] == image_id) & (r["region_id"] == region_id) & (r["annotator"] == annotator)]
        if hit.empty:
            raise release.ReleaseError(f"no region {image_id}/{region_id} by annotator {annotator!r}")
        if not isinstance(rle := hit["mask"].iloc[0], dict):
            raise release.ReleaseError(
                f"region {image_id}/{region_id} by {annotator!r} has no mask: it was released with its label only"
            )
        return geometry.from_rle(rle)

    def image_sources(self, ids: list[int], root: str | Path | None = None) -> dict[int, Path | bytes]:
        """Where the pixels of images ``ids`` are: each image's file under the raw tree ``root``
        when given, else its bytes from the release's embedded image files
        (``release.images: embed``; only the rows asked for are read). Raises
        ``errors.InputError`` naming the images without pixels and how to give them."""
        paths = dict(
            zip(
                *(self.arrow("images", ["image_id", "path"]).column(c).to_pylist() for c in ("image_id", "path")),
                strict=True,
            )
        )
        if root is not None:
            missing = [i for i in ids if not (Path(root) / paths[i]).is_file()]
            if missing:
                raise errors.InputError(
                    f"--images {root}: no file {paths[missing[0]]} for image {missing[0]}; "
                    "give the raw tree the release was built from"
                )
            return {i: Path(root) / paths[i] for i in ids}
        found: dict[int, Path | bytes] = {}
        for path in sorted((self.folder / "hf").glob("images-*.parquet")):
            if "image" not in pq.read_schema(path).names:
                continue
            table = pq.read_table(path, columns=["image_id", "image"], filters=[("image_id", "in", ids)])
            for image_id, cell in zip(table["image_id"].to_pylist(), table["image"].to_pylist(), strict=True):
                found[image_id] = cell["bytes"]
        missing = [i for i in ids if i not in found]
        if missing:
            embedded = self.manifest.get("images") == "embedded"
            why = "they are not in its files" if embedded else "it names its images by path"
            raise errors.InputError(
                f"{self.folder}: no pixels of image(s) {missing[:5]} in the release ({why}); give the raw tree with --images ROOT"
            )
        return found

    def verify(self) -> list[str]:
        return release.verify(self.folder)

    def query(self, question: str, annotator: str | None = None) -> pd.DataFrame:
        """Which images have ``"X relation Y"`` (e.g. ``"person above horse"``): the ordered
        region pairs of one annotator (default: the reference annotator) where it holds, as
        image_id, region_id, other_region_id (``regionbench.release.query.related``)."""
        subject, relation, other = query.parse(question)
        name = annotator or self.reference_annotator
        relations = self.relations[self.relations["annotator"] == name]
        return query.related(self.regions_of(name), relations, subject, relation, other)

    def within(self, label: str, other: str, pixels: float, annotator: str | None = None) -> pd.DataFrame:
        """Regions labelled ``label`` within ``pixels`` of a region labelled ``other`` in the
        same image, with their distance (``regionbench.release.query.within``)."""
        return query.within(self.regions_of(annotator), label, other, pixels)


def cache_root() -> Path:
    """The user's cache of fetched releases, verifications and humans' ceilings:
    ``$REGIONBENCH_CACHE``, else ``~/.cache/regionbench``."""
    return Path(os.environ.get("REGIONBENCH_CACHE", Path.home() / ".cache" / "regionbench"))


def _state_key(folder: Path, manifest: dict[Any, Any]) -> str:
    """The manifest's digest with the size, modification and change times and inode of every
    file in the folder: a change to any file (or a file added) makes a new key. The change time
    is the kernel's own: a file written in place and its modification time set back still
    changes it, so a cached verification never vouches for bytes it did not see."""
    digest = hashlib.sha256(manifest["digest"].encode())
    for path in sorted(folder.rglob("*")):
        stat = path.lstat()
        digest.update(
            os.fsencode(path.relative_to(folder).as_posix())
            + f"\0{stat.st_size}\0{stat.st_mtime_ns}\0{stat.st_ctime_ns}\0{stat.st_ino}\n".encode()
        )
    return digest.hexdigest()


def verified(data: Release) -> Release:
    """``data`` once ``release.verify`` finds nothing wrong with it, else a ``ReleaseError``
    naming the first problems. A sound result is remembered under ``$REGIONBENCH_CACHE/verified``
    by the folder's state (``_state_key``), so loading the same untouched release again costs a
    directory listing, not a pass over every byte."""
    data.check_reads = True  # the cache key sees sizes and times, not bytes: reads check the bytes
    marker = cache_root() / "verified" / _state_key(data.folder, data.manifest)
    if marker.is_file():
        return data
    problems = release.verify(data.folder)
    if problems:
        more = f" (and {len(problems) - 1} more; regionbench verify lists them)" if len(problems) > 1 else ""
        raise release.ReleaseError(
            f"{data.folder}: refused, the release does not verify: {problems[0]}{more}; "
            "fetch it again, or pass verify=False (--no-verify) to read it as it is"
        )
    with contextlib.suppress(OSError):  # a read-only cache only costs the next verification
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    return data


def _find_release(fs: Any, dataset: str | None, version: str | None) -> str:
    """Path of the release inside the repository: the given one, else the highest version."""
    folders = [m.rsplit("/", 1)[0].lstrip("/") for m in fs.glob("releases/*/v*/manifest.json")]
    wanted = None if version is None else release.parse_version(version)
    chosen = [
        (v, path.split("/")[-2], path)
        for v, path in release.release_folders(folders)
        if (dataset is None or path.split("/")[-2] == dataset) and (wanted is None or v == wanted)
    ]
    if not chosen:
        raise release.ReleaseError(f"no release {dataset or '*'}/v{version or '*'} under releases/ at this rev")
    if dataset is None and len({c[1] for c in chosen}) > 1:
        raise release.ReleaseError(f"several datasets {sorted({c[1] for c in chosen})}; pass dataset=")
    return max(chosen)[2]


def _fetch(source: str | Path, rev: str | None, dataset: str | None, version: str | None) -> Path:
    """The release folder of a repository at ``rev``, fetched once into the cache."""
    from dvc.api import DVCFileSystem  # the optional [dvc] extra, imported only here

    fs = DVCFileSystem(str(source), rev=rev)
    path = _find_release(fs, dataset, version)
    resolved = fs.repo.get_rev() if hasattr(fs, "repo") else rev
    key = hashlib.sha256(f"{source}\0{resolved}\0{path}".encode()).hexdigest()[:16]
    target = cache_root() / key / Path(path).name
    if not (target / "manifest.json").is_file():
        staging = target.with_name(target.name + ".partial")
        staging.parent.mkdir(parents=True, exist_ok=True)
        fs.get(path, str(staging), recursive=True)
        staging.rename(target)  # complete copies only: an interrupted fetch is redone
    return target


def load(
    source: str | Path,
    rev: str | None = None,
    *,
    dataset: str | None = None,
    version: str | None = None,
    verify: bool = True,
    expect: str | None = None,
) -> Release:
    """A release from a folder, or from a git+DVC repository (path or URL) at ``rev``.

    In a repository the release is found under ``releases/<dataset>/v<version>/``; with several,
    ``dataset`` and ``version`` choose (default: the highest version). The files come through
    DVC (its remote or cache) into ``$REGIONBENCH_CACHE`` (default ``~/.cache/regionbench``).
    The release is verified first (``verified``); ``verify=False`` reads it as it is. ``expect``
    pins it: its manifest digest (``regionbench verify`` prints it) must be this one, even with
    ``verify=False``, so a release edited and sealed again is refused.
    """
    folder = Path(source)
    if rev is None and (folder / "manifest.json").is_file():
        return _checked(Release(folder), verify, expect)
    if rev is None and not folder.exists() and "://" not in str(source) and not str(source).startswith("git@"):
        raise release.ReleaseError(f"{source}: no such folder; give a release folder, or a repository with rev=")
    if rev is None and folder.is_file():
        raise release.ReleaseError(f"{source}: a file, not a release folder (one with manifest.json)")
    if rev is None and folder.is_dir() and not (folder / ".git").exists() and not (folder / ".dvc").exists():
        raise release.ReleaseError(  # a local folder that is neither a release nor a repository
            f"{source}: not a release folder (it has no manifest.json) nor a git+DVC repository; give the "
            "release's folder, releases/<dataset>/v<version>"
        )
    if importlib.util.find_spec("dvc") is None:
        raise release.ReleaseError(
            f"{source}: not a release folder, and reading a repository needs DVC; "
            "pass a release folder or install regionbench[dvc]"
        )
    try:
        target = _fetch(source, rev, dataset, version)
    except release.ReleaseError:
        raise
    except Exception as exc:  # DVC and git report a wrong repository or rev in many types
        raise release.ReleaseError(
            f"{source}: not a release folder, and not readable as a git+DVC repository"
            f"{f' at {rev}' if rev else ''} ({errors.first_line(exc)})"
        ) from None
    return _checked(Release(target), verify, expect)


def _checked(data: Release, verify: bool, expect: str | None) -> Release:
    """``data`` pinned to ``expect`` (a ReleaseError when its digest is another) and verified."""
    if expect is not None and (wrong := release.expect_problem(data.manifest, expect)):
        raise release.ReleaseError(f"{data.folder}: refused, {wrong}")
    return verified(data) if verify else data

"""Synthetic collections in the SAIAPR TC-12 layout: ``regionbench.synthetic.rendering`` draws the scenes,
this module measures them as the official files do and writes them through ``LayoutWriter``.

Output is a function of (profile, seed, quirks, vocabulary) only.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from threadpoolctl import threadpool_limits

from regionbench.core import features, relations
from regionbench.core.hierarchy import Hierarchy
from regionbench.io.saiapr import spatial, text
from regionbench.io.saiapr.writer import FolderRows, LayoutWriter
from regionbench.pipeline.vocabulary import Registry
from regionbench.synthetic import Options, captions, rendering
from regionbench.synthetic import plans as planning

LAYOUT = "saiapr"
CHUNK = 100  # images per rendering job, so both cores stay busy to the last folder


def word_ids(vocabulary: str = planning.DEFAULT_VOCABULARY) -> dict[str, int]:
    """Word -> id of the generated ``wlist.txt``: every row of the vocabulary's id registry."""
    return {label: i for i, label, _ in Registry.read(Path(vocabulary) / "label_ids.tsv").rows}


def official_path(label: str, hierarchy: Hierarchy) -> str:
    """A label's path as ``ontology_path.txt`` spells it: ``entity->->humans->_group-of-persons␠␠``."""
    path = hierarchy.path(label)
    return text.format_ontology_path(path, {x for x in path if hierarchy.nodes[x].group})


@dataclass(frozen=True)
class Quirks:
    """Real-file quirks to inject (docs/inputs.md). Always-on ones are part of the official format."""

    enabled: bool = False

    def ontology_path(self, label: str, image_id: int, region_id: int, hierarchy: Hierarchy) -> str:
        if not self.enabled:
            return official_path(label, hierarchy)
        key = image_id * 31 + region_id
        if label == "lamp" and key % 3 == 0:  # the official file files some lamps elsewhere
            return "entity->->man-made->object->generic-objects->lamp  "
        if label == "trees" and key % 4 == 0:
            return "entity->->landscape-nature->_trees  "
        if key % 41 == 0:  # a bare path although the label is specific
            return "entity->"
        return official_path(label, hierarchy)

    def trailer(self) -> str:
        return "\n\n" if self.enabled else ""


def _row_key(line: str) -> tuple[str, int]:
    """The official files list images in string order of their id (112, 116, 25, 26 ...)."""
    image_id, region_id = line.split("\t", 2)[:2]
    return image_id, int(region_id)


def write_images(
    root: Path, folder: str, plans: list[planning.ImagePlan], seed: int, quirks: Quirks, vocabulary: str
) -> FolderRows:
    """Render and write the per-image files of ``plans`` (all in ``folder``); return their text rows."""
    writer = LayoutWriter(root)
    hierarchy = planning.load_hierarchy(vocabulary)
    ids = word_ids(vocabulary)
    rows = FolderRows()
    for plan in sorted(plans, key=lambda p: str(p.image_id)):
        pixels, masks = rendering.render(plan, seed)
        jpeg = rendering.photograph(plan, pixels)
        writer.image(folder, plan.image_id, jpeg)
        writer.caption(folder, plan.image_id, captions.caption_fields(plan))
        # The official features describe the stored JPEG, so measure the decoded file.
        measured = features.image_features(features.decode_image(io.BytesIO(jpeg)), masks)
        pairs = relations.pairwise(masks, (plan.height, plan.width))
        writer.spatial_relations(folder, plan.image_id, spatial.pair_matrices(pairs, len(masks)))
        for region_id, (label, mask) in enumerate(zip(plan.labels, masks, strict=True), start=1):
            writer.mask(folder, plan.image_id, region_id, mask)
            path = quirks.ontology_path(label, plan.image_id, region_id, hierarchy)
            rows.add(plan.image_id, region_id, ids[label], path, measured[region_id - 1])
    return rows


def write_folder(
    root: Path,
    folder: str,
    plans: list[planning.ImagePlan],
    seed: int = 0,
    quirks: Quirks = Quirks(),
    vocabulary: str = planning.DEFAULT_VOCABULARY,
) -> int:
    """Render and write every image of one folder and its text files; returns the region count."""
    rows = write_images(root, folder, plans, seed, quirks, vocabulary)
    return LayoutWriter(root).texts(folder, rows.sorted(_row_key), quirks.trailer())


def _write_images_job(args: tuple[Path, str, list[planning.ImagePlan], int, Quirks, str]) -> FolderRows:
    # One BLAS thread per worker: the workers already fill the cores.
    with threadpool_limits(limits=1):
        return write_images(*args)


def write_collection(
    out: str | Path,
    profile: str,
    seed: int = 0,
    quirks: bool = False,
    workers: int | None = None,
    vocabulary: str | Path | None = None,
) -> Iterator[tuple[str, int]]:
    """Generate a whole collection under ``out``; yields (folder, regions written) as folders finish.

    ``vocabulary`` is the folder of ``hierarchy.yaml`` and ``label_ids.tsv`` (default: the
    library's). Images are rendered in parallel by up to ``workers`` processes (default: all cores;
    ``plans.workers_for``: none for a tiny collection),
    in chunks of at most ``CHUNK`` images; each folder's text files are written once all its
    chunks are back.
    """
    root = Path(out)
    vocab = str(vocabulary) if vocabulary is not None else planning.DEFAULT_VOCABULARY
    plans = planning.plan_collection(profile, seed, vocab)
    writer = LayoutWriter(root)
    writer.wordlist({i: label for label, i in word_ids(vocab).items()})
    by_folder: dict[str, list[planning.ImagePlan]] = {}
    for plan in plans:
        by_folder.setdefault(plan.folder, []).append(plan)
    jobs = [
        (root, folder, group[start : start + CHUNK], seed, Quirks(quirks), vocab)
        for folder, group in sorted(by_folder.items())
        for start in range(0, len(group), CHUNK)
    ]
    workers = planning.workers_for(workers, len(plans), len(jobs))
    pool = ProcessPoolExecutor(max_workers=workers) if workers > 1 else None
    try:
        results = pool.map(_write_images_job, jobs) if pool else map(_write_images_job, jobs)
        pending: dict[str, FolderRows] = {}
        chunks_left = {folder: -(-len(group) // CHUNK) for folder, group in by_folder.items()}
        for job, rows in zip(jobs, results, strict=True):
            folder = job[1]
            pending.setdefault(folder, FolderRows()).extend(rows)
            chunks_left[folder] -= 1
            if chunks_left[folder] == 0:
                done = pending.pop(folder).sorted(_row_key)
                yield folder, writer.texts(folder, done, Quirks(quirks).trailer())
    finally:
        if pool:
            pool.shutdown()


def generate(out: str | Path, profile: str, options: Options) -> Iterator[tuple[str, int]]:
    """``write_collection`` with the options that apply here (yields folder, regions)."""
    return write_collection(out, profile, options.seed, options.quirks, options.workers, options.vocabulary)


def annotators(requested: int) -> int:
    """The annotators of a generated tree when ``requested`` are asked for: one annotator: the layout's files hold one."""
    return 1

"""Features and relations measured by ingest, on the pixels and masks it decodes once, equal
those measured from the files and the stored masks independently."""

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from regionbench.core import features, geometry, relations, tables
from regionbench.core.hierarchy import Hierarchy
from regionbench.core.relations import RelationSettings
from regionbench.pipeline.ingest import IngestSettings, ingest_shard
from regionbench.pipeline.shard_measures import Measures
from regionbench.pipeline.vocabulary import DEFAULT_DIR, Registry
from regionbench.synthetic.coco import write_collection


def _measured_again(root: Path, images: pa.Table, regions: pa.Table) -> tuple[np.ndarray, list[tuple]]:
    """Features (regions' order) and relation rows recomputed from the image files and RLE masks."""
    rows = regions.to_pylist()
    values, pairs = [], []
    for image in images.to_pylist():
        pixels = features.decode_image(root / image["path"])
        own = [r for r in rows if r["image_id"] == image["image_id"]]
        masks = [geometry.from_rle(r["mask"]) for r in own]
        if own:
            values.append(features.image_features(pixels, masks))
        for annotator in sorted({r["annotator"] for r in own}):
            group = [(r["region_id"], m) for r, m in zip(own, masks, strict=True) if r["annotator"] == annotator]
            p = relations.pairwise([m for _, m in group], pixels.shape[:2])
            for n in range(len(p.i)):
                pairs.append((image["image_id"], annotator, group[p.i[n]][0], group[p.j[n]][0],
                              p.topological[n], p.horizontal[n], p.vertical[n]))  # fmt: skip
    return np.concatenate(values), sorted(pairs)


def _check(root: Path, shard) -> None:
    assert shard.features.num_rows == shard.regions.num_rows > 0
    assert shard.features.select(tables.REGION_KEY).equals(shard.regions.select(tables.REGION_KEY))
    expected, pairs = _measured_again(root, shard.images, shard.regions)
    got = np.column_stack([shard.features.column(n).to_numpy() for n in features.FEATURE_NAMES])
    np.testing.assert_array_equal(got, expected)  # the same bits
    assert [tuple(r.values()) for r in shard.relations.to_pylist()] == pairs


def test_saiapr_ingest_measures_what_the_files_hold(demo_quirks: Path) -> None:
    _check(demo_quirks, ingest_shard(demo_quirks, "00"))


def test_coco_ingest_measures_every_annotator_and_the_consensus(tmp_path: Path) -> None:
    raw = tmp_path / "coco"
    for _ in write_collection(raw, "tiny", seed=0, annotators=2, disagreement=0.2, workers=1):
        pass
    words = Registry.read(DEFAULT_DIR / "label_ids.tsv").ids()
    hierarchy = Hierarchy.from_yaml(DEFAULT_DIR / "hierarchy.yaml")
    shard = ingest_shard(raw, "00", words, hierarchy=hierarchy, settings=IngestSettings(shard_size=10))
    assert {"annotator-1", "annotator-2", "consensus"} == set(shard.features.column("annotator").to_pylist())
    _check(raw, shard)


@pytest.mark.parametrize(("tau", "adjacency_px"), [(0.0, 0), (0.3, 2)])
def test_relation_settings_reach_the_measures(demo_quirks: Path, tau: float, adjacency_px: int) -> None:
    shard = ingest_shard(demo_quirks, "01", relations=RelationSettings(tau=tau, adjacency_px=adjacency_px))
    image = shard.images.to_pylist()[0]
    own = [r for r in shard.regions.to_pylist() if r["image_id"] == image["image_id"]]
    masks = [geometry.from_rle(r["mask"]) for r in own]
    p = relations.pairwise(masks, (image["height"], image["width"]), tau, adjacency_px)
    stored = [r for r in shard.relations.to_pylist() if r["image_id"] == image["image_id"]]
    assert [r["topological"] for r in stored] == p.topological.tolist()
    assert [r["horizontal"] for r in stored] == p.horizontal.tolist()


def test_an_image_without_regions_adds_nothing() -> None:
    m = Measures()
    m.add(7, np.zeros((4, 4, 3), dtype=np.uint8), [])
    assert m.features().num_rows == m.relations().num_rows == 0
    assert m.features().schema.equals(tables.FEATURES) and m.relations().schema.equals(tables.RELATIONS)

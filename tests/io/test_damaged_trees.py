"""Every layout, generated and then damaged as people damage trees (a file cut short, emptied,
filled with other bytes, deleted, copied under another name): each raw item ends in a table or
in the rejects with a one-line reason, or the tree is refused in one line; never a traceback."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regionbench.core import errors
from regionbench.io import layouts
from regionbench.pipeline.ingest import IngestSettings, Shard, ingest_shard
from regionbench.synthetic import ade20k as ade_synth
from regionbench.synthetic import ade20k_full as ade_full_synth
from regionbench.synthetic import bsds500 as bsds_synth
from regionbench.synthetic import camvid as camvid_synth
from regionbench.synthetic import cityscapes as cs_synth
from regionbench.synthetic import classmap as classmap_synth
from regionbench.synthetic import cocostuff as cocostuff_synth
from regionbench.synthetic import labelme as labelme_synth
from regionbench.synthetic import lip as lip_synth
from regionbench.synthetic import mapillary as mapillary_synth
from regionbench.synthetic import panoptic as panoptic_synth
from regionbench.synthetic import pascal_context as context_synth
from regionbench.synthetic import voc as voc_synth
from regionbench.synthetic.coco import write_collection

ALL = IngestSettings(shard_size=1000)


def _coco(root: Path) -> None:
    for _ in write_collection(root, "tiny", annotators=2, disagreement=0.2, workers=1):
        pass
    (root / "truth.json").unlink()  # the generator's own answer key, not a file of the layout


TREES: dict[str, Callable[[Path], object]] = {
    "voc": lambda root: list(voc_synth.write_tree(root, 5, seed=1, size=(40, 30))),
    "cityscapes": lambda root: list(cs_synth.write_tree(root, 4, 0, (64, 32))),
    "ade20k": lambda root: list(ade_synth.write_tree(root, 4, 0, (48, 32))),
    "classmap": lambda root: list(classmap_synth.write_tree(root, 4, 0, (48, 32))),
    "camvid": lambda root: list(camvid_synth.write_tree(root, 4, 0, (48, 32))),
    "lip": lambda root: list(lip_synth.write_tree(root, 4, 0, (32, 48))),
    "cocostuff": lambda root: list(cocostuff_synth.write_tree(root, 4, 0, (48, 32))),
    "labelme": lambda root: list(labelme_synth.write_tree(root, 4, 0, (48, 32))),
    "mapillary": lambda root: list(mapillary_synth.write_tree(root, 4, 0, (48, 32))),
    "pascal-context": lambda root: list(context_synth.write_tree(root, 4, 0, (48, 32))),
    "ade20k-full": lambda root: list(ade_full_synth.write_tree(root, 3, 0, (48, 32))),
    "bsds500": lambda root: bsds_synth.write_tree(root, {"train": [11, 12], "val": [21]}, humans=2),
    "coco": _coco,
    "coco-panoptic": lambda root: list(panoptic_synth.write_tree(root, 4, 0, "coco", 2)),
}
ACTS = ("cut short", "emptied", "other bytes", "deleted", "copied")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for layout, make in TREES.items():
        root = tmp_path_factory.mktemp(layout) / "raw"
        made = make(root)
        out[layout] = made if isinstance(made, Path) else root  # BSDS500's writer says where its root is
    return out


def damage(root: Path, index: int, act: str, data: bytes) -> str:
    """One careless act on the ``index``-th file of the tree (sorted, wrapping): what was done."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    path = files[index % len(files)]
    if act == "cut short":
        path.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 2)])
    elif act == "emptied":
        path.write_bytes(b"")
    elif act == "other bytes":
        path.write_bytes(data)
    elif act == "deleted":
        path.unlink()
    else:  # copied under another name beside it, as a second download does
        shutil.copy(path, path.with_name(f"copy-{path.name}"))
    return f"{act}: {path.relative_to(root)}"


def ledger_balances(shard: Shard) -> None:
    report = shard.report
    for counts in [report["images"], report["regions"], *report["annotators"].values()]:
        assert counts["seen"] == counts["accepted"] + counts["rejected"], report
    assert report["images"]["accepted"] == shard.images.num_rows
    assert report["regions"]["accepted"] == shard.regions.num_rows


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    layout=st.sampled_from(sorted(TREES)),
    acts=st.lists(
        st.tuples(st.integers(0, 10_000), st.sampled_from(ACTS), st.binary(max_size=64)), min_size=1, max_size=3
    ),
)
def test_a_damaged_tree_of_any_layout_loses_nothing_and_never_tracebacks(
    generated: dict[str, Path], tmp_path_factory: pytest.TempPathFactory, layout: str, acts: list
) -> None:
    root = tmp_path_factory.mktemp("damaged") / "raw"
    shutil.copytree(generated[layout], root)
    done = [damage(root, *act) for act in acts]
    found = layouts.get(layout)
    try:
        found.check(root)
        words = (
            found.write_vocabulary(root, tmp_path_factory.mktemp("vocabulary")).ids
            if isinstance(found, layouts.NamesCategories)
            else {"segment": 1}
        )
        shards = found.shards(root, ALL.shard_size)
        assert shards, (layout, done)  # a tree damaged in a file or three still has its shards
        read = [ingest_shard(root, shard, words, layout=found, settings=ALL) for shard in shards]
    except Exception as exc:  # refused: one line saying what and where, never a bug's traceback
        said = errors.describe(exc)
        assert said is not None, (done, repr(exc))
        assert "\n" not in said.strip(), (done, said)
        return
    for shard in read:
        ledger_balances(shard)
        for row in shard.rejects.to_pylist():
            assert row["reason"] and "\n" not in row["reason"], (done, row)


@settings(max_examples=18, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    layout=st.sampled_from(["classmap", "camvid", "lip", "cocostuff", "labelme", "pascal-context"]),
    pick=st.integers(0, 10**6),
    where=st.tuples(st.floats(0, 0.999), st.floats(0, 0.999)),
)
def test_a_value_the_format_s_table_lacks_is_said_in_the_format_s_words(
    tmp_path_factory: pytest.TempPathFactory, layout: str, pick: int, where: tuple[float, float]
) -> None:
    """Any pixel value that no class of the format has, anywhere in a map, is a rejected region
    whose reason names the format's own table (classes.csv only where the tree has one) and
    what to do."""
    import numpy as np
    from PIL import Image

    root = tmp_path_factory.mktemp(layout) / layout
    TREES[layout](root)
    reader = layouts.get(layout)
    known = reader.classes(root)  # type: ignore[attr-defined]
    item = reader.items(root)[0]  # type: ignore[attr-defined]
    path = root / next(iter(item.maps.values()))
    picture = Image.open(path)
    pixels = np.array(picture)
    unknown = [v for v in range(1, 255) if v not in known]  # 0 and 255: a format's "none" values
    value = unknown[pick % len(unknown)]
    y, x = int(where[0] * pixels.shape[0]), int(where[1] * pixels.shape[1])
    pixels[y, x] = value
    changed = Image.fromarray(pixels, mode=picture.mode)
    if picture.mode == "P":
        changed.putpalette(picture.getpalette())
    changed.save(path)
    shard = ingest_shard(root, "00", None, layout=layout, settings=ALL)
    reasons = [r for r in shard.rejects.column("reason").to_pylist() if f"value {value} " in r]
    assert reasons, shard.rejects.to_pylist()
    assert ("classes.csv" in reasons[0]) == (layout == "classmap"), reasons[0]
    assert reader.unknown in reasons[0]  # type: ignore[attr-defined]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(share=st.floats(0.0, 0.999))
def test_a_mapillary_config_cut_short_is_said_to_be_cut_short(
    tmp_path_factory: pytest.TempPathFactory, share: float
) -> None:
    """config.json cut anywhere: one line saying it is not readable JSON, and where, not that it
    lacks a labels list."""
    from regionbench.io import mapillary
    from regionbench.io.shards import IngestError

    root = tmp_path_factory.mktemp("vistas") / "mapillary"
    TREES["mapillary"](root)
    path, _ = mapillary.config(root)  # type: ignore[misc]
    text = path.read_bytes()
    path.write_bytes(text[: min(int(len(text) * share), len(text.rstrip()) - 1)])  # its closing brace at least
    with pytest.raises(IngestError) as refused:
        mapillary.read_config(str(path), f"{share}")
    said = str(refused.value)
    assert "\n" not in said and "not readable JSON" in said and "no labels list" not in said, said


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(st.from_regex(r"20[0-9]{2}_00[0-9]{4}", fullmatch=True), min_size=1, max_size=3, unique=True))
def test_a_pascal_context_list_naming_an_absent_image_is_a_reject(
    tmp_path_factory: pytest.TempPathFactory, names: list[str]
) -> None:
    """A SegmentationContext list naming images the tree lacks: each is a reject saying so (as
    VOC's), the others read as before."""
    from regionbench.io import pascal_context

    root = tmp_path_factory.mktemp("context") / "pascal-context"
    TREES["pascal-context"](root)
    before = ingest_shard(root, "00", None, layout="pascal-context", settings=ALL)
    folder = pascal_context.base(root)
    listed = sorted((folder / pascal_context.LISTS).glob("*.txt"))[0]
    present = {i.name for i in layouts.get("pascal-context").items(root)}  # type: ignore[attr-defined]
    absent = [n for n in names if n not in present]
    listed.write_text(listed.read_text() + "".join(f"{n}\n" for n in absent))
    after = ingest_shard(root, "00", None, layout="pascal-context", settings=ALL)
    rejected = {r["key"]: r["reason"] for r in after.rejects.to_pylist()}
    for name in absent:
        assert rejected.get(name, "").startswith("a split list names it but neither its image"), rejected
    assert after.images.num_rows == before.images.num_rows
    assert after.rejects.num_rows == before.rejects.num_rows + len(absent)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pixels=st.integers(1, 40), seed=st.integers(0, 1000))
def test_mapillary_class_maps_that_disagree_with_the_instance_maps_are_a_reject(
    tmp_path_factory: pytest.TempPathFactory, pixels: int, seed: int
) -> None:
    """A class map whose pixels name another class than the instance map beside it: the image is
    a reject naming the class map and the pixels, as Cityscapes' label ids against its instance
    ids; the other images read as before."""
    import numpy as np
    from PIL import Image

    root = tmp_path_factory.mktemp("vistas") / "mapillary"
    TREES["mapillary"](root)
    before = ingest_shard(root, "00", None, layout="mapillary", settings=ALL)
    item = layouts.get("mapillary").items(root)[0]  # type: ignore[attr-defined]
    from regionbench.io import mapillary

    labels = root / mapillary.class_map_of(next(iter(item.maps.values())))
    picture = Image.open(labels)
    values = np.array(picture)
    rng = np.random.default_rng(seed)
    flat = values.reshape(-1)
    chosen = rng.choice(flat.size, size=min(pixels, flat.size), replace=False)
    flat[chosen] = (flat[chosen] + 1) % 3  # another class of the table
    changed = Image.fromarray(values, mode=picture.mode)
    if picture.mode == "P":
        changed.putpalette(picture.getpalette())
    changed.save(labels)
    after = ingest_shard(root, "00", None, layout="mapillary", settings=ALL)
    rejected = [r for r in after.rejects.to_pylist() if r["key"] == item.name]
    differ = int(np.count_nonzero(values != np.array(Image.open(root / next(iter(item.maps.values())))) // 256))
    assert rejected and "another class than the instance map" in rejected[0]["reason"], after.rejects.to_pylist()
    assert f"gives {differ} pixels" in rejected[0]["reason"]
    assert after.images.num_rows == before.images.num_rows - 1

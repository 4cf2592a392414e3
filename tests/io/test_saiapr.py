"""Ingest of the SAIAPR layout: exact masks, quirks reported, every bad input rejected."""

from __future__ import annotations

import os
import shutil
import string
from pathlib import Path

import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.core import geometry
from regionbench.io.matlab import read_mat, write_mat
from regionbench.io.saiapr import folder_state, parse_caption, parse_ontology_path, read_wordlist
from regionbench.io.saiapr.text import format_ontology_path, write_wordlist
from regionbench.io.shards import IngestError, Shard, reject_row
from regionbench.pipeline.ingest import IngestSettings, ingest_shard, merge_reports


def reconciles(shard: Shard) -> None:
    for part in ("images", "regions"):
        r = shard.report[part]
        assert r["seen"] == r["accepted"] + r["rejected"], (part, r)
    assert shard.report["images"]["accepted"] == shard.images.num_rows
    assert shard.report["regions"]["accepted"] == shard.regions.num_rows


def first_row(root: Path) -> tuple[int, int, int]:
    image_id, region_id, label_id = (root / "00" / "labels.txt").read_text().splitlines()[0].split("\t")
    return int(image_id), int(region_id), int(label_id)


def reasons(shard: Shard) -> list[str]:
    return shard.rejects.column("reason").to_pylist()


def test_clean_collection_is_accepted_whole(tiny_raw: Path) -> None:
    shard = ingest_shard(tiny_raw, "00")
    reconciles(shard)
    assert shard.rejects.num_rows == 0
    rows = (tiny_raw / "00" / "labels.txt").read_text().splitlines()
    assert shard.regions.num_rows == len(rows)
    assert shard.images.num_rows == len(list((tiny_raw / "00" / "images").glob("*.jpg")))
    keys = list(
        zip(shard.regions.column("image_id").to_pylist(), shard.regions.column("region_id").to_pylist(), strict=True)
    )
    assert keys == sorted(keys)


def test_every_mask_round_trips(tiny_raw: Path) -> None:
    shard = ingest_shard(tiny_raw, "00")
    images = {r["image_id"]: r for r in shard.images.to_pylist()}
    for region in shard.regions.to_pylist():
        img = images[region["image_id"]]
        h, w = img["height"], img["width"]
        seg = read_mat(tiny_raw / "00" / "segmentation_masks" / f"{region['image_id']}_{region['region_id']}.mat")
        mask = seg["segimg_t"] == 0
        np.testing.assert_array_equal(geometry.from_rle(region["mask"]), mask)
        polygon = shapely.from_wkb(region["geometry"])
        assert polygon.is_valid and polygon.area == mask.sum() == region["area_px"]
        np.testing.assert_array_equal(geometry.polygon_to_mask(polygon, h, w), mask)
        x, y, bw, bh = region["bbox_x"], region["bbox_y"], region["bbox_w"], region["bbox_h"]
        assert mask[y : y + bh, x : x + bw].sum() == mask.sum()


def test_quirks_lose_nothing_and_are_reported(demo_quirks: Path) -> None:
    shards = [ingest_shard(demo_quirks, folder) for folder in ("00", "01")]
    for shard in shards:
        reconciles(shard)
        assert shard.rejects.num_rows == 0
    total_rows = sum(
        len([x for x in (demo_quirks / f / "labels.txt").read_text().splitlines() if x]) for f in ("00", "01")
    )
    assert sum(s.regions.num_rows for s in shards) == total_rows == 1500
    report = merge_reports([s.report for s in shards])
    quirks = report["quirks"]
    for quirk in ("rows_not_in_numeric_order", "trailing_blank_lines", "ontology_doubled_arrow", "ontology_group_flag",
                  "ontology_trailing_space", "ontology_bare_entity_path", "grayscale_images", "whole_image_regions",
                  "captions_not_utf8", "internal_node_labels"):  # fmt: skip
        assert quirks.get(quirk, 0) > 0, quirk
    conflicts = {c["node"]: c for c in report["parent_conflicts"]}
    assert conflicts["lamp"]["chosen"] == "furniture" and "generic-objects" in conflicts["lamp"]["parents"]
    assert conflicts["trees"]["chosen"] == "vegetation" and "landscape-nature" in conflicts["trees"]["parents"]
    assert {"trees", "sky"} <= set(report["internal_node_labels"])


def test_ontology_path_normalisation() -> None:
    path = parse_ontology_path("entity->->humans->_group-of-persons  ")
    assert path.nodes == ["entity", "humans", "group-of-persons"]
    assert path.quirks == {"doubled_arrow", "group_flag", "trailing_space"}
    assert path.groups == {"group-of-persons"}
    bare = parse_ontology_path("entity->")
    assert (bare.nodes, bare.quirks) == (["entity"], {"bare_entity_path"})


_NODE = st.from_regex(r"[a-z][a-z-]{0,12}", fullmatch=True)


@given(st.lists(_NODE, min_size=1, max_size=6, unique=True), st.data())
def test_ontology_paths_round_trip(below: list[str], data: st.DataObject) -> None:
    """The writer's spelling of any path parses back to the same nodes and group flags."""
    path = ["entity", *below]
    groups = set(data.draw(st.lists(st.sampled_from(below), unique=True)))
    parsed = parse_ontology_path(format_ontology_path(path, groups))
    assert parsed.nodes == path and parsed.groups == groups
    assert {"doubled_arrow", "trailing_space"} <= parsed.quirks


@given(
    st.dictionaries(st.integers(1, 10_000), st.from_regex(r"[a-z][a-z0-9 .-]{0,20}[a-z]", fullmatch=True), max_size=30)
)
def test_word_list_round_trips(tmp_path_factory: pytest.TempPathFactory, words: dict[int, str]) -> None:
    """wlist.txt has one encoding rule: what the writer writes, the reader reads back."""
    path = tmp_path_factory.mktemp("wlist") / "wlist.txt"
    write_wordlist(path, words)
    assert read_wordlist(path) == words


def test_caption_encodings() -> None:
    doc = "<DOC><TITLE>Bogotá</TITLE><DESCRIPTION>a man</DESCRIPTION></DOC>"
    assert parse_caption(doc.encode("cp1252")) == (
        {"title": "Bogotá", "description": "a man", "notes": None, "location": None, "date": None},
        "cp1252",
    )
    assert parse_caption(doc.encode("utf-8"))[1] == "utf-8"
    assert parse_caption(b"<DOC><TITLE>\x81</TITLE></DOC>")[1] == "latin-1"
    with pytest.raises(ValueError, match="DOC"):
        parse_caption(b"just text")


# --- bad input: each case damages a private copy of the tiny collection --------------------------


def damage_image_truncated(root: Path, image_id: int, region_id: int) -> str:
    path = root / "00" / "images" / f"{image_id}.jpg"
    path.write_bytes(path.read_bytes()[:600])
    return "unreadable image"


def damage_image_garbage(root: Path, image_id: int, region_id: int) -> str:
    (root / "00" / "images" / f"{image_id}.jpg").write_bytes(b"not a jpeg at all")
    return "unreadable image"


def damage_image_missing(root: Path, image_id: int, region_id: int) -> str:
    (root / "00" / "images" / f"{image_id}.jpg").unlink()
    return "file is missing"


def damage_mask_missing(root: Path, image_id: int, region_id: int) -> str:
    (root / "00" / "segmentation_masks" / f"{image_id}_{region_id}.mat").unlink()
    return "has no mask file"


def damage_mask_variable(root: Path, image_id: int, region_id: int) -> str:
    path = root / "00" / "segmentation_masks" / f"{image_id}_{region_id}.mat"
    write_mat(path, {"mask": read_mat(path)["segimg_t"]})
    return "no variable 'segimg_t' (found: mask)"


def damage_mask_shape(root: Path, image_id: int, region_id: int) -> str:
    path = root / "00" / "segmentation_masks" / f"{image_id}_{region_id}.mat"
    write_mat(path, {"segimg_t": read_mat(path)["segimg_t"][:-1]})
    return "differs from the image's"


def damage_mask_values(root: Path, image_id: int, region_id: int) -> str:
    path = root / "00" / "segmentation_masks" / f"{image_id}_{region_id}.mat"
    seg = read_mat(path)["segimg_t"]
    seg[0, 0] = 3
    write_mat(path, {"segimg_t": seg})
    return "must be 0 (inside) or -1 (outside)"


def damage_mask_empty(root: Path, image_id: int, region_id: int) -> str:
    path = root / "00" / "segmentation_masks" / f"{image_id}_{region_id}.mat"
    write_mat(path, {"segimg_t": -np.ones_like(read_mat(path)["segimg_t"])})
    return "empty mask"


def damage_mask_corrupt(root: Path, image_id: int, region_id: int) -> str:
    (root / "00" / "segmentation_masks" / f"{image_id}_{region_id}.mat").write_bytes(b"MATLAB 5.0 garbage")
    return "unreadable MAT file"


def damage_mask_without_row(root: Path, image_id: int, region_id: int) -> str:
    src = root / "00" / "segmentation_masks" / f"{image_id}_{region_id}.mat"
    (root / "00" / "segmentation_masks" / f"{image_id}_99.mat").write_bytes(src.read_bytes())
    return "mask without a row"


def damage_unknown_label(root: Path, image_id: int, region_id: int) -> str:
    path = root / "00" / "labels.txt"
    lines = path.read_text().splitlines()
    lines[0] = f"{image_id}\t{region_id}\t9999"
    path.write_text("\n".join(lines) + "\n")
    return "unknown label id 9999"


def damage_duplicate_conflicting(root: Path, image_id: int, region_id: int) -> str:
    path = root / "00" / "labels.txt"
    path.write_text(path.read_text() + f"{image_id}\t{region_id}\t3\n")
    return "disagree on the label"


def damage_malformed_row(root: Path, image_id: int, region_id: int) -> str:
    path = root / "00" / "labels.txt"
    path.write_text(path.read_text() + "12 x\n")
    return "expected 'image_id<TAB>region_id<TAB>label_id'"


def damage_bomb(root: Path, image_id: int, region_id: int) -> str:
    from PIL import Image

    Image.new("L", (9000, 9000)).save(root / "00" / "images" / f"{image_id}.jpg")
    return "decompression bomb"


def escape_by_symlink(path: Path) -> str:
    """Replace ``path`` with a symlink to a copy outside the collection root."""
    outside = path.parents[3] / f"outside{path.suffix}"
    outside.write_bytes(path.read_bytes())
    path.unlink()
    os.symlink(outside, path)
    return "escapes the collection root"


def damage_symlink_escape(root: Path, image_id: int, region_id: int) -> str:
    return escape_by_symlink(root / "00" / "images" / f"{image_id}.jpg")


def damage_mask_bad_name(root: Path, image_id: int, region_id: int) -> str:
    (root / "00" / "segmentation_masks" / "notes.mat").write_bytes(b"x")
    return "not named '<image_id>_<region_id>.mat' (ASCII digits)"


def damage_mask_symlink_escape(root: Path, image_id: int, region_id: int) -> str:
    return escape_by_symlink(root / "00" / "segmentation_masks" / f"{image_id}_{region_id}.mat")


def damage_caption_orphan(root: Path, image_id: int, region_id: int) -> str:
    (root / "annotations_complete_eng" / "00" / "777.eng").write_bytes(b"<DOC></DOC>")
    return "not in the collection"


def damage_caption_garbage(root: Path, image_id: int, region_id: int) -> str:
    (root / "annotations_complete_eng" / "00" / f"{image_id}.eng").write_bytes(b"\xff\xfe binary")
    return "not an IAPR TC-12 document"


DAMAGES = [v for k, v in sorted(globals().items()) if k.startswith("damage_")]


@pytest.mark.parametrize("damage", DAMAGES, ids=lambda f: f.__name__.removeprefix("damage_"))
def test_bad_input_is_rejected_with_a_reason(tiny_copy: Path, damage) -> None:
    image_id, region_id, _ = first_row(tiny_copy)
    expected = damage(tiny_copy, image_id, region_id)
    shard = ingest_shard(tiny_copy, "00", settings=IngestSettings(max_image_pixels=50_000_000))
    reconciles(shard)
    assert any(expected in r for r in reasons(shard)), reasons(shard)
    assert all(r["stage"] == "ingest" and r["source"] and r["key"] for r in shard.rejects.to_pylist())
    with pytest.raises(IngestError) as err:
        ingest_shard(tiny_copy, "00", settings=IngestSettings(strict=True, max_image_pixels=50_000_000))
    lines = str(err.value).splitlines()
    assert len(lines) == shard.rejects.num_rows and any(expected in line for line in lines)


def test_rejected_image_takes_its_regions_along(tiny_copy: Path) -> None:
    image_id, _, _ = first_row(tiny_copy)
    n_regions = sum(
        1 for line in (tiny_copy / "00" / "labels.txt").read_text().splitlines() if line.startswith(f"{image_id}\t")
    )
    damage_image_garbage(tiny_copy, image_id, 1)
    shard = ingest_shard(tiny_copy, "00")
    regions = [r for r in shard.rejects.to_pylist() if r["item"] == "region"]
    assert len(regions) == n_regions and all("image was rejected" in r["reason"] for r in regions)


def test_identical_duplicate_rows_keep_the_region(tiny_copy: Path) -> None:
    image_id, region_id, label_id = first_row(tiny_copy)
    path = tiny_copy / "00" / "labels.txt"
    path.write_text(path.read_text() + f"{image_id}\t{region_id}\t{label_id}\n")
    shard = ingest_shard(tiny_copy, "00")
    reconciles(shard)
    assert shard.report["label_rows_rejected"] == 1
    assert (image_id, region_id) in zip(
        shard.regions.column("image_id").to_pylist(), shard.regions.column("region_id").to_pylist(), strict=True
    )


def test_missing_shard_or_wordlist_is_one_line(tiny_copy: Path) -> None:
    with pytest.raises(IngestError, match="folder shard missing"):
        ingest_shard(tiny_copy, "07")
    (tiny_copy / "wlist.txt").unlink()
    with pytest.raises(IngestError, match="word list missing"):
        ingest_shard(tiny_copy, "00", layout="saiapr")


def test_folder_state_follows_every_file_of_the_shard(tiny_copy: Path) -> None:
    before, other = folder_state(tiny_copy, "01"), folder_state(tiny_copy, "00")
    assert folder_state(tiny_copy, "01") == before
    mask = sorted((tiny_copy / "01" / "segmentation_masks").glob("*.mat"))[0]
    stat = mask.stat()
    os.utime(mask, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    touched = folder_state(tiny_copy, "01")
    assert touched != before
    caption = sorted((tiny_copy / "annotations_complete_eng" / "01").glob("*.eng"))[0]
    caption.unlink()
    assert folder_state(tiny_copy, "01") not in (before, touched)
    assert folder_state(tiny_copy, "00") == other  # the other shard is untouched


def test_the_same_tree_at_another_path_gives_the_same_rejects(tiny_copy: Path, tmp_path: Path) -> None:
    """Pillow and scipy quote absolute paths in their messages; rejects must not."""
    image_id, region_id, _ = first_row(tiny_copy)
    damage_image_garbage(tiny_copy, image_id, region_id)
    mask = sorted((tiny_copy / "00" / "segmentation_masks").glob("*.mat"))[-1]
    mask.write_bytes(b"MATLAB 5.0 MAT-file" + bytes(200))
    elsewhere = Path(shutil.copytree(tiny_copy, tmp_path / "another" / "place" / "raw"))
    here, there = ingest_shard(tiny_copy, "00"), ingest_shard(elsewhere, "00")
    assert here.rejects.num_rows >= 2 and here.rejects.equals(there.rejects)
    for reason in here.rejects.column("reason").to_pylist():
        assert str(tiny_copy) not in reason and str(tiny_copy.resolve()) not in reason


@given(st.lists(st.text(string.ascii_letters + string.digits + "-_ .", min_size=1, max_size=8), min_size=1, max_size=4))
def test_reject_reasons_name_paths_relative_to_the_root(parts: list[str]) -> None:
    parts = [p for p in parts if p.strip(".")] or ["raw"]
    root = Path("/srv", *parts)
    for spelling in (str(root), f"{root}/00/images/1.jpg", f"'{root}/x' and {root}"):
        row = reject_row(root, "00/images/1.jpg", "1", "image", f"cannot identify image file {spelling}")
        assert str(root) not in row["reason"] and row["reason"].startswith("cannot identify image file ")


def _globbed_names(root: Path) -> list[str]:
    """The tree's image names as a path glob lists them (what the listing replaced)."""
    from regionbench.core import numbers

    paths = sorted(p for p in root.glob("*/images/*") if numbers.is_id(p.relative_to(root).parts[0]))
    return [p.relative_to(root).as_posix() for p in paths]


NAMES = st.text(string.ascii_letters + string.digits + "._- é", min_size=1, max_size=8).filter(
    lambda n: n not in (".", "..")
)

IMAGE_NAMES = st.from_regex(r"[0-9]{1,3}\.(jpg|JPG)", fullmatch=True)


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.one_of(st.from_regex(r"[0-9]{1,3}", fullmatch=True), NAMES),
        st.one_of(st.none(), st.just("file"), st.lists(st.one_of(NAMES, IMAGE_NAMES), max_size=5, unique=True)),
        max_size=5,
    )
)
def test_the_tree_s_image_names_are_those_a_glob_lists(tree: dict) -> None:
    """Folder shards or not, with images/ or without, a file where a folder belongs, any names:
    the names every shard checks its ids against, and their fingerprint, are the glob's."""
    import hashlib
    import tempfile

    from regionbench.io.saiapr.ingest import IMAGE_NAME, _elsewhere, image_names_state

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for folder, content in tree.items():
            if content == "file":
                (root / folder).write_text("not a folder")
                continue
            (root / folder).mkdir(exist_ok=True)
            for name in content or []:
                (root / folder / "images").mkdir(exist_ok=True)
                (root / folder / "images" / name).write_bytes(b"")
        names = _globbed_names(root)
        assert image_names_state(root) == hashlib.sha256(os.fsencode("\n".join(names))).hexdigest()
        for folder in [*tree, "00"]:
            expected: dict[int, str] = {}
            for name in names:
                other, _, file = name.split("/")
                if other != folder and (m := IMAGE_NAME.fullmatch(file)):
                    expected.setdefault(int(m.group(1)), name)
            assert _elsewhere(root, folder) == expected


def test_a_tree_s_own_files_give_its_vocabulary(tiny_copy: Path, tmp_path: Path) -> None:
    """Words the library lacks, spelled as the official list spells them, enter with their
    word-list ids and their ontology paths; a used word no path places sits under the root; an
    unused word keeps its id reserved; a registry with other ids is refused in one line."""
    from layouts import saiapr_words

    from regionbench.core.hierarchy import Hierarchy
    from regionbench.io.saiapr import text
    from regionbench.pipeline import vocabulary
    from regionbench.pipeline.vocabulary import Registry, VocabularyError

    changed = saiapr_words.official_spellings(tiny_copy)
    out = tmp_path / "vocabulary"
    counts = vocabulary.derive("saiapr", tiny_copy, out)
    assert counts["unplaced"] == 1
    tree = Hierarchy.from_yaml(out / "hierarchy.yaml")
    library = Hierarchy.from_yaml(vocabulary.DEFAULT_DIR / "hierarchy.yaml")
    assert tree.path(saiapr_words.RENAMED)[:-1] == library.path(str(changed["old"]))[:-1]
    assert str(changed["old"]) not in tree.nodes
    assert tree.parent(saiapr_words.UNPLACED) == "entity"
    assert saiapr_words.UNUSED not in tree.nodes
    words = {word: i for i, word in text.read_wordlist(tiny_copy / "wlist.txt").items()}
    rows = {label: (i, status) for i, label, status in Registry.read(out / "label_ids.tsv").rows}
    assert {label: rows[label][0] for label in tree.labels} == {label: words[label] for label in tree.labels}
    assert rows[saiapr_words.UNUSED] == (changed["unused_id"], "reserved")
    assert rows["n.a."] == (1, "reserved")
    assert vocabulary.derive("saiapr", tiny_copy, out)["new_ids"] == 0  # a second run keeps the registry

    registry = Registry.read(out / "label_ids.tsv")
    swapped = [(i, "x-" + label if label == saiapr_words.RENAMED else label, s) for i, label, s in registry.rows]
    Registry(swapped).write(out / "label_ids.tsv")
    with pytest.raises(
        VocabularyError, match=rf"label_ids.tsv gives id {changed['renamed_id']} to 'x-ancent-building'"
    ):
        vocabulary.derive("saiapr", tiny_copy, out)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), labels_only=st.booleans())
def test_every_label_row_ends_in_the_regions_or_the_rejects(
    tiny_raw: Path, tmp_path_factory, data, labels_only
) -> None:
    """Trees with images, masks and label rows missing (and folders released by their labels
    alone): the ledger holds for images and regions (seen = accepted + rejected, accepted = rows,
    rejected = rejects rows) and each label row's region is in the regions or in the rejects, a
    region of a lost image with the image's reason."""
    root = Path(shutil.copytree(tiny_raw, tmp_path_factory.mktemp("tree") / "raw"))
    folder = root / "00"
    rows = [line.split("\t") for line in (folder / "labels.txt").read_text().splitlines()]
    images = sorted({int(r[0]) for r in rows})
    gone = data.draw(st.sets(st.sampled_from(images), max_size=3), label="images removed")
    for image_id in gone:
        (folder / "images" / f"{image_id}.jpg").unlink()
    if labels_only:
        shutil.rmtree(folder / "segmentation_masks")
    else:
        masks = sorted((folder / "segmentation_masks").glob("*.mat"))
        for path in data.draw(st.sets(st.sampled_from(masks), max_size=4), label="masks removed"):
            path.unlink()
    dropped = data.draw(st.sets(st.integers(0, len(rows) - 1), max_size=4), label="label rows removed")
    kept = [r for k, r in enumerate(rows) if k not in dropped]
    (folder / "labels.txt").write_text("".join("\t".join(r) + "\n" for r in kept))

    shard = ingest_shard(root, "00")
    reconciles(shard)
    rejects = shard.rejects.to_pylist()
    for item, part in (("image", "images"), ("region", "regions")):
        assert shard.report[part]["rejected"] == sum(r["item"] == item for r in rejects)
    released = {(r["image_id"], r["region_id"]) for r in shard.regions.to_pylist()}
    refused = {r["key"]: r["reason"] for r in rejects if r["item"] == "region"}
    for image_id, region_id, _ in kept:
        key = (int(image_id), int(region_id))
        assert (key in released) != (f"{image_id}/{region_id}" in refused), key
        if int(image_id) in gone:
            assert refused[f"{image_id}/{region_id}"] == (
                f"its image was rejected (00/images/{image_id}.jpg: labels.txt names this image but its file is missing)"
            )


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), dropped=st.integers(0, 3))
def test_region_label_ids_are_the_vocabulary_s_whatever_wlist_numbers(tiny_raw: Path, seed: int, dropped: int) -> None:
    """A vocabulary that numbers the words otherwise than wlist.txt (any permutation, some words
    missing): every region carries the vocabulary's id for its label, so joining regions to the
    vocabulary on label_id gives each region its own label; wlist.txt's id stays as category_id;
    a word the vocabulary lacks is a reject naming it."""
    wlist = {word: i for i, word in read_wordlist(tiny_raw / "wlist.txt").items()}
    rng = np.random.default_rng(seed)
    words = sorted(wlist)
    ids = dict(zip(words, (int(i) for i in rng.permutation(len(words)) + 1000), strict=True))
    used = sorted({row.split()[2] for row in (tiny_raw / "00/labels.txt").read_text().split("\n") if row.strip()})
    gone = {read_wordlist(tiny_raw / "wlist.txt")[int(i)] for i in used[:dropped]}
    vocabulary = {w: i for w, i in ids.items() if w not in gone}
    shard = ingest_shard(tiny_raw, "00", vocabulary)
    reconciles(shard)
    for row in shard.regions.to_pylist():
        assert row["label_id"] == vocabulary[row["label"]] and row["category_id"] == wlist[row["label"]]
    refused = [r for r in reasons(shard) if "is not a vocabulary label" in r]
    assert {r.split("'")[1] for r in refused} == gone  # each word taken away was used in folder 00


@settings(max_examples=10, deadline=None)
@given(moved=st.integers(0, 5), target=st.sampled_from(["00", "01"]))
def test_an_image_in_another_folder_than_its_id_names_is_kept_and_said(
    tiny_raw: Path, tmp_path_factory, moved: int, target: str
) -> None:
    """Folder NN holds images NN000 to NN999: an image whose id names another folder (and its
    label rows and masks with it) is kept, and counted as a quirk."""
    root = Path(shutil.copytree(tiny_raw, tmp_path_factory.mktemp("raw") / "raw"))
    source = "01" if target == "00" else "00"
    images = sorted((root / source / "images").glob("*.jpg"))[:moved]
    rows = (root / source / "labels.txt").read_text().splitlines()
    keep, take = [], []
    for row in rows:
        (take if any(row.split()[0] == p.stem for p in images) else keep).append(row)
    for path in images:
        shutil.move(path, root / target / "images" / path.name)
        for mask in (root / source / "segmentation_masks").glob(f"{path.stem}_*.mat"):
            shutil.move(mask, root / target / "segmentation_masks" / mask.name)
    (root / source / "labels.txt").write_text("".join(f"{r}\n" for r in keep))
    with open(root / target / "labels.txt", "a") as f:
        f.write("".join(f"{r}\n" for r in take))
    shard = ingest_shard(root, target)
    reconciles(shard)
    assert shard.report["quirks"].get("image_in_another_folder", 0) == len(images)
    named = shard.report.get("quirk_files", {}).get("image_in_another_folder", [])
    assert named == sorted(f"{target}/images/{p.name}" for p in images)  # the files, for the build's last lines

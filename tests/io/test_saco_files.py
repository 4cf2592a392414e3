"""SA-Co's files read in-process (the ``saco`` layout): each malformed pair or instance rejected
with one line naming it, and, over generated files of any damage, every pair and every instance
of every file either kept or rejected (the ledger balances), each pair id naming one photo and
phrase in every file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from layouts.in_process import released
from PIL import Image
from pycocotools import mask as coco_mask

from regionbench.io import layouts

H, W = 12, 16
PHOTOS = ("p0.png", "p1.png", "p2.png")


def rle(x: int, y: int, size: tuple[int, int] = (H, W)) -> dict:
    mask = np.zeros(size, dtype=np.uint8)
    mask[y : y + 4, x : x + 4] = 1
    return {"size": list(size), "counts": coco_mask.encode(np.asfortranarray(mask))["counts"].decode()}


def write(root: Path, files: dict[str, dict[str, Any]]) -> None:
    """A tree of the three photos and ``files`` (annotator -> its document)."""
    (root / "images").mkdir(parents=True, exist_ok=True)
    (root / "annotations").mkdir(exist_ok=True)
    for k, name in enumerate(PHOTOS):
        Image.fromarray(np.full((H, W, 3), 40 * k, dtype=np.uint8)).save(root / "images" / name)
    for who, document in files.items():
        named = {"info": {"description": f"annotator {who}'s reading"}} | document  # no file a byte copy of another
        (root / "annotations" / f"gold_t_merged_{who}_release_test.json").write_text(json.dumps(named))


def entry(pair: int, photo: str, phrase: str | None, exhaustive: bool = True) -> dict:
    out = {"id": pair, "file_name": photo, "height": H, "width": W, "is_instance_exhaustive": exhaustive}
    return out | ({"text_input": phrase} if phrase is not None else {})


def clean() -> dict[str, dict[str, Any]]:
    """Two annotators, four pairs: dog and cat on p0, dog (negative) on p1, cat on p2."""
    images = [
        entry(1, "p0.png", "dog"),
        entry(2, "p0.png", "cat"),
        entry(3, "p1.png", "dog"),
        entry(4, "p2.png", "cat"),
    ]
    annotations = [
        {"id": 1, "image_id": 1, "category_id": 1, "segmentation": rle(1, 1), "iscrowd": 0},
        {"id": 2, "image_id": 2, "category_id": 1, "segmentation": rle(8, 4), "iscrowd": 0},
        {"id": 3, "image_id": 4, "category_id": 1, "segmentation": rle(2, 6), "iscrowd": 0},
    ]
    return {who: {"images": [dict(e) for e in images], "annotations": [dict(a) for a in annotations],
                  "categories": [{"id": 1, "name": "object"}]} for who in "ab"}  # fmt: skip


def _no_phrase(files: dict) -> None:
    del files["a"]["images"][1]["text_input"]


def _blank_phrase(files: dict) -> None:
    files["a"]["images"][1]["text_input"] = " ? "


def _wrong_size(files: dict) -> None:
    files["a"]["annotations"][1]["segmentation"] = rle(8, 4, (H + 1, W))


def _pair_twice(files: dict) -> None:
    files["a"]["images"].append(entry(2, "p1.png", "cat"))


def _photo_and_phrase_twice(files: dict) -> None:
    files["a"]["images"].append(entry(9, "p0.png", "cat"))


def _numbered_otherwise(files: dict) -> None:
    files["b"]["images"][1]["text_input"] = "bird"


DAMAGES = {
    "a pair without a phrase": (_no_phrase, "pair 2", "no text_input"),
    "a phrase without a letter": (_blank_phrase, "pair 2", "no text_input"),
    "an RLE of the wrong size": (_wrong_size, "p0.png/2", "its RLE is of size [13, 16], its pair's image is [12, 16]"),
    "a pair id twice": (_pair_twice, "pair 2", "pair 2 is listed twice (images[1] too)"),
    "a photo and phrase twice": (_photo_and_phrase_twice, "pair 9", "pairs p0.png with 'cat' as pair 2 does"),
    "a pair numbered otherwise": (_numbered_otherwise, "pair 2", "number the pairs alike in every annotator's file"),
}


def test_the_tree_is_sa_co_s_and_every_pair_is_kept(tmp_path: Path) -> None:
    write(tmp_path / "raw", clean())
    assert layouts.detect(tmp_path / "raw").name == "saco"  # not an instances file of the COCO layout
    tables = released(tmp_path / "raw", "saco")
    assert tables.arrow("rejects").num_rows == 0
    rows = {(r["annotator"], r["image_id"]): r for r in tables.arrow("coverage").to_pylist()}
    assert sorted(pair for r in rows.values() for pair in r["pair_ids"]) == [1, 1, 2, 2, 3, 3, 4, 4]
    names = {r["category_id"]: r["name"] for r in tables.arrow("source_categories").to_pylist()}
    p1 = next(r for (who, _), r in rows.items() if who == "a" and r["pair_ids"] == [3])
    assert [names[c] for c in p1["neg_category_ids"]] == ["dog"] and p1["not_exhaustive_category_ids"] == []
    assert sorted(tables.arrow("regions", ["label"])["label"].to_pylist()) == ["cat", "cat", "cat", "cat", "dog", "dog"]


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_malformed_pair_or_instance_is_one_reject_naming_it(tmp_path: Path, damage: str) -> None:
    spoil, key, reason = DAMAGES[damage]
    files = clean()
    spoil(files)
    write(tmp_path / "raw", files)
    rejects = released(tmp_path / "raw", "saco").arrow("rejects").to_pylist()
    named = [r for r in rejects if r["key"] == key]
    assert len(named) == 1 and reason in named[0]["reason"] and "\n" not in named[0]["reason"], rejects
    assert named[0]["source"].startswith("annotations/gold_t_merged_")
    # the instances of a rejected pair go with it, each naming why
    for r in rejects:
        assert r is named[0] or "was rejected" in r["reason"], r


def test_a_file_that_is_not_sa_co_s_stops_in_one_line(tmp_path: Path) -> None:
    files = clean()
    write(tmp_path / "raw", files)
    (tmp_path / "raw/annotations/gold_t_merged_b_release_test.json").write_text('{"images": [{"text_input": "x"}]')
    with pytest.raises(Exception, match=r"gold_t_merged_b_release_test.json: .*JSON") as caught:
        released(tmp_path / "raw", "saco")
    assert "\n" not in str(caught.value)


PAIR = st.fixed_dictionaries(
    {"id": st.integers(1, 6), "photo": st.sampled_from(PHOTOS), "phrase": st.sampled_from(["dog", "cat", "Dog", "", None]),
     "exhaustive": st.booleans()}
)  # fmt: skip
INSTANCE = st.fixed_dictionaries(
    {"id": st.integers(1, 8), "pair": st.integers(1, 7), "x": st.integers(0, 12), "taller": st.booleans()}
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.lists(PAIR, max_size=7), st.lists(INSTANCE, max_size=6)), min_size=1, max_size=3))
def test_every_pair_and_instance_is_kept_or_rejected(tmp_path_factory: pytest.TempPathFactory, drawn: list) -> None:
    """Files of random pairs and instances (ids repeated, phrases missing or differing in case
    only, RLEs of the wrong size, instances of no pair): each file's pairs kept in ``coverage`` plus
    those rejected are its images entries, its regions plus its rejected instances its annotations,
    and a pair id names one photo and phrase wherever it is kept."""
    files = {}
    for k, (pairs, instances) in enumerate(drawn):
        files["abc"[k]] = {
            "images": [entry(p["id"], p["photo"], p["phrase"], p["exhaustive"]) for p in pairs],
            "annotations": [
                {"id": i["id"], "image_id": i["pair"], "category_id": 1, "iscrowd": 0,
                 "segmentation": rle(i["x"], 2, (H + 1, W) if i["taller"] else (H, W))}
                for i in instances
            ],
        }  # fmt: skip
    root = tmp_path_factory.mktemp("tree") / "raw"
    write(root, files)
    if not any(isinstance(p["phrase"], str) and p["phrase"] for pairs, _ in drawn for p in pairs):
        return  # no phrase to make a vocabulary of: the vocabulary stage says so
    tables = released(root, "saco")
    rejects = tables.arrow("rejects").to_pylist()
    coverage = tables.arrow("coverage").to_pylist()
    regions = tables.arrow("regions", ["annotator"])["annotator"].to_pylist()
    named: dict[int, set[tuple[int, int]]] = {}
    for who, document in files.items():
        source = f"annotations/gold_t_merged_{who}_release_test.json"
        kept = [p for r in coverage if r["annotator"] == who for p in r["pair_ids"]]
        refused = [r for r in rejects if r["source"] == source and r["item"] == "image-entry"]
        assert len(kept) + len(refused) == len(document["images"])
        lost = [r for r in rejects if r["source"] == source and r["item"] == "region"]
        assert regions.count(who) + len(lost) == len(document["annotations"])
    labels = {(r["annotator"], r["category_id"]): r["label"] for r in tables.arrow("source_categories").to_pylist()}
    for r in coverage:
        for category, pair in zip(r["pair_category_ids"], r["pair_ids"], strict=True):
            named.setdefault(pair, set()).add((r["image_id"], labels[(r["annotator"], category)]))
    assert all(len(places) == 1 for places in named.values())


def test_another_file_beside_sa_co_s_is_named_as_left_alone(tmp_path: Path) -> None:
    """An instances file under ``annotations/`` beside SA-Co's is not read as an annotator's: the
    ingest report names it, and nothing of it enters the release."""
    from layouts.in_process import WHOLE

    from regionbench.pipeline.ingest import ingest_shard

    write(tmp_path / "raw", clean())
    (tmp_path / "raw/annotations/instances.json").write_text(
        json.dumps({"images": [], "annotations": [], "categories": []})
    )
    shard = ingest_shard(tmp_path / "raw", "00", {"dog": 1, "cat": 2}, layout="saco", settings=WHOLE)
    assert shard.report["files_left_alone"] == ["annotations/instances.json"]
    assert sorted(set(shard.regions["annotator"].to_pylist())) == ["a", "b"] and shard.rejects.num_rows == 0

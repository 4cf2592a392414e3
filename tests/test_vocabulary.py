from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from regionbench.core.hierarchy import Hierarchy
from regionbench.pipeline import vocabulary as voc

CONFIG = voc.DEFAULT_DIR


def curation(**kw) -> voc.Curation:
    base = {"min_lists": 2, "a_min_count": 1, "caption_min_count": 1, "drop": {}, "add": {}}
    return voc.Curation(**{**base, **kw})


def test_c_list_needs_min_lists() -> None:
    lists = {"h": {"a", "b", "c"}, "a": {"c", "d", "e"}, "t": {"b", "c", "d"}}
    mentions = Counter({w: 5 for w in "abcde"})
    final, fates = voc.curate(lists, mentions, curation())
    assert final == {"b", "c", "d"}
    assert {f["word"] for f in fates if f["c_list"]} == {"b", "c", "d"}
    final3, _ = voc.curate(lists, mentions, curation(min_lists=3))
    assert final3 == {"c"}


def test_drop_add_and_caption_filter() -> None:
    lists = {
        "h": {"binoculars", "marble", "herd", "man"},
        "a": {"man", "binoculars"},
        "t": {"binoculars", "marble", "man"},
    }
    mentions = Counter({"man": 9, "binoculars": 4, "marble": 0})
    cur = curation(drop={"binoculars": "rarely in the images"}, add={"herd": "H-list", "sky-red": "curators"})
    final, fates = voc.curate(lists, mentions, cur)
    assert final == {"man", "herd", "sky-red"}
    fate = {f["word"]: f for f in fates}
    assert fate["binoculars"]["fate"] == "dropped" and fate["binoculars"]["reason"] == "rarely in the images"
    assert fate["marble"]["fate"] == "dropped" and "mentioned 0 time(s)" in fate["marble"]["reason"]
    assert fate["herd"]["fate"] == "added" and fate["herd"]["reason"] == "H-list"
    assert fate["sky-red"]["fate"] == "added" and fate["sky-red"]["n_lists"] == 0


def test_tokenize_singular_and_stop_words() -> None:
    assert voc.tokenize("Two MEN, a woman & three buses; Bogotá") == [
        "two",
        "man",
        "a",
        "woman",
        "three",
        "bus",
        "bogotá",
    ]
    assert [voc.singular(w) for w in ["skies", "trees", "glass", "bus", "churches", "leaves", "grass"]] == [
        "sky", "tree", "glass", "bus", "church", "leaf", "grass"
    ]  # fmt: skip
    words, mentions = voc.caption_counts(
        ["Two groups of persons and a man in front of the trees", "A man, blue sky"],
        ["group-of-persons", "man", "tree", "sky-blue"],
    )
    assert words["man"] == 2 and words["tree"] == 1 and "of" not in words and "the" not in words
    assert mentions == Counter({"man": 2, "group-of-persons": 1, "tree": 1})
    assert voc.a_list(words, mentions, 2) == {"man": 2}


def test_non_utf8_list_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "h_list.txt"
    path.write_bytes("man\nwoman\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(voc.VocabularyError, match=r"h_list.txt:3: not UTF-8 \(byte 0xe9\)") as err:
        voc.read_word_list(path)
    assert "\n" not in str(err.value)


def test_registry_ids_survive_reorder_and_removal(tmp_path: Path) -> None:
    reg = voc.Registry([(1, "n.a.", "reserved")]).register(["sky", "man", "rock"])
    ids = reg.ids()
    assert ids == {"n.a.": 1, "man": 2, "rock": 3, "sky": 4}
    assert reg.register(["rock", "sky", "man"]).ids() == ids  # order does not matter
    removed = reg.register(["sky", "man"])
    assert "rock" not in removed.ids() and (3, "rock", "retired") in removed.rows
    grown = removed.register(["sky", "man", "cloud"])
    assert grown.ids()["cloud"] == 5  # the retired id 3 is not given to another label
    back = grown.register(["sky", "man", "cloud", "rock"])
    assert back.ids()["rock"] == 3  # a returning label keeps its old id
    path = tmp_path / "ids.tsv"
    back.write(path)
    assert voc.Registry.read(path) == back


def test_registry_rejects_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "ids.tsv"
    path.write_text("1\tman\tactive\n2\tman\tactive\n")
    with pytest.raises(voc.VocabularyError, match="appears twice"):
        voc.Registry.read(path)


def test_annotated_label_missing_from_vocabulary() -> None:
    tree = Hierarchy.from_yaml(CONFIG / "hierarchy.yaml")
    with pytest.raises(voc.VocabularyError, match=r"'unicorn' \(2 regions, e.g. 03: image 3012 region 1\)"):
        voc.check_annotated(
            tree, {"man": ["00: image 1 region 1"], "unicorn": ["03: image 3012 region 1", "03: image 3013 region 2"]}
        )


@pytest.fixture(scope="module")
def demo_build(demo_ingest: Path) -> voc.VocabularyBuild:
    images = sorted(demo_ingest.glob("*/images.parquet"))
    regions = sorted(demo_ingest.glob("*/regions.parquet"))
    captions, used, per_image = voc.annotations_from_shards(images, regions)
    return voc.build(CONFIG, captions, used, per_image)


def test_demo_vocabulary_follows_the_paper_examples(demo_build: voc.VocabularyBuild) -> None:
    fates = {f["word"]: f for f in demo_build.procedure["candidates"]}
    for word in ("binoculars", "printer", "background", "marble"):
        assert fates[word]["fate"] == "dropped", fates[word]
        assert fates[word]["c_list"]
    assert fates["background"]["in_a_list"]  # frequent in captions, dropped as useless
    assert fates["marble"]["caption_count"] == 0
    assert fates["herd"]["fate"] == "added" and not fates["herd"]["c_list"]
    assert fates["sky-red"]["fate"] == "added" and fates["sky-red"]["n_lists"] == 0
    table = demo_build.vocabulary.to_pylist()
    origin = {r["label"]: r["origin"] for r in table}
    assert origin["herd"] == origin["sky-red"] == "added"
    assert origin["man"] == "candidate" and origin["generic-objects"] == "hierarchy node"
    assert demo_build.procedure["a_list"]["man"] >= 3


def test_demo_vocabulary_covers_every_annotated_label(demo_build: voc.VocabularyBuild, demo_ingest: Path) -> None:
    used = Counter()
    for path in demo_ingest.glob("*/regions.parquet"):
        used.update(pq.read_table(path, columns=["label"]).column("label").to_pylist())
    rows = {r["label"]: r for r in demo_build.vocabulary.to_pylist()}
    assert set(used) <= set(rows)
    assert all(rows[label]["region_count"] == n for label, n in used.items())
    assert sum(r["region_count"] for r in rows.values()) == 1500
    ids = [r["label_id"] for r in demo_build.vocabulary.to_pylist()]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    sky_blue = rows["sky-blue"]
    assert (
        sky_blue["parent"] == "sky"
        and sky_blue["depth"] == 3
        and sky_blue["path"] == "entity->landscape-nature->sky->sky-blue"
    )
    assert rows["sky"]["group"] and not rows["sky"]["is_leaf"] and rows["sky-blue"]["is_leaf"]


def test_branch_statistics_add_up(demo_build: voc.VocabularyBuild) -> None:
    tree = Hierarchy.from_yaml(CONFIG / "hierarchy.yaml")
    counts = {r["label"]: r["region_count"] for r in demo_build.vocabulary.to_pylist()}
    branches = {r["branch"]: r for r in demo_build.branches.to_pylist()}
    assert sorted(branches) == sorted(tree.children["entity"])
    for branch, row in branches.items():
        expected = sum(n for label, n in counts.items() if tree.branch(label) == branch)
        assert row["frequency"] == expected
        used = [x for x in tree.descendants(branch) if counts.get(x, 0) > 0]
        assert row["descendants"] == len(used)
        assert row["leaves"] == sum(tree.is_leaf(x) for x in used)
        assert row["normalised_frequency"] == pytest.approx(expected / row["descendants"])
        assert 0 < row["leaves"] <= row["descendants"]
    assert sum(r["frequency"] for r in branches.values()) == 1500


def test_table_2_counts_the_nodes_the_paper_profile_uses() -> None:
    """Paper 001, section 3.4 and Table 2: the leaves used add up to 200 of the 255 labels."""
    from regionbench.synthetic import plans

    tree = Hierarchy.from_yaml(CONFIG / "hierarchy.yaml")
    rows = voc.branch_stats(tree, Counter(plans.label_counts("paper"))).to_pylist()
    assert sum(r["leaves"] for r in rows) == 200
    assert sum(r["descendants"] for r in rows) + len(rows) == 255  # the six branch nodes are used too
    assert sum(r["frequency"] for r in rows) == 99_555

"""ImageCLEF 2012 concept and annotation files: written from judgments, read back unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.io import imageclef

CONCEPTS = ["sky", "man", "tree", "car"]
IMAGES = ["25", "112", "7"]


def every_image(judgments: dict) -> imageclef.Judgments:
    """Each annotator judged every image: an image it has no entry for, it saw nothing in."""
    return {a: {i: set(m.get(i, set())) for i in IMAGES} for a, m in judgments.items()}


judgment_sets = st.dictionaries(
    st.sampled_from(["a1", "a2", "a3", "a4", "a5"]),
    st.dictionaries(st.sampled_from(IMAGES), st.sets(st.sampled_from(CONCEPTS))),
    min_size=3,
)


@settings(max_examples=60, deadline=None)
@given(judgment_sets)
def test_files_round_trip(tmp_path_factory: pytest.TempPathFactory, judgments: imageclef.Judgments) -> None:
    """Whoever judged whichever images: the images judged by three or more read back unchanged."""
    images = [i for i in IMAGES if len(imageclef.judges(judgments, i)) >= imageclef.MIN_RAW_ANNOTATORS]
    if not images:
        with pytest.raises(imageclef.ImageClefError, match="at least 3 annotators' judgments per image"):
            imageclef.write_files(tmp_path_factory.mktemp("clef") / "out", judgments, CONCEPTS, IMAGES)
        return
    out = tmp_path_factory.mktemp("clef") / "out"
    imageclef.write_files(out, judgments, CONCEPTS, images)
    back, concepts, read_images = imageclef.read_files(out)
    assert (concepts, read_images) == (CONCEPTS, images)
    expected = {a: {i: m[i] for i in images if i in m} for a, m in judgments.items()}
    assert back == {a: m for a, m in expected.items() if m}


def test_clean_and_raw_contents(tmp_path: Path) -> None:
    judgments = every_image(
        {"a1": {"25": {"sky", "man"}}, "a2": {"25": {"sky"}}, "a3": {"25": {"sky", "car"}, "7": {"tree"}}}
    )
    out = tmp_path / "out"
    imageclef.write_files(out, judgments, CONCEPTS, IMAGES)
    assert (out / "concepts/clean/sky.txt").read_text() == "25\n"
    assert (out / "concepts/clean/tree.txt").read_text() == ""
    assert (out / "concepts/raw/man.txt").read_text() == "25 1 0 0\n112 0 0 0\n7 0 0 0\n"
    assert (out / "annotations/clean/25.txt").read_text() == "sky\n"
    assert (out / "annotations/raw/25.txt").read_text().splitlines()[:2] == ["sky 1.000000", "man 0.333333"]


def test_problems_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(imageclef.ImageClefError, match="at least 3 annotators"):
        imageclef.write_files(tmp_path / "two", {"a": {}, "b": {}}, CONCEPTS, IMAGES)
    out = tmp_path / "out"
    imageclef.write_files(out, every_image({"a": {"7": {"car"}}, "b": {"7": {"car"}}, "c": {}}), CONCEPTS, IMAGES)
    (out / "concepts/clean/car.txt").write_text("")
    with pytest.raises(imageclef.ImageClefError) as failed:
        imageclef.read_files(out)
    assert "concepts/clean/car.txt: differs from the majority" in str(failed.value)
    assert "\n" not in str(failed.value)


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_any_damage_is_one_line_or_read_unchanged(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Any file of an export deleted, emptied, cut, given a stray byte or a line with other
    digits: reading it back either gives the judgments written or fails with one line naming
    a file of the export, never another exception."""
    judgments = every_image(
        {"a1": {"25": {"sky", "man"}}, "a2": {"25": {"sky"}}, "a3": {"25": {"sky", "car"}, "7": {"tree"}}}
    )
    out = tmp_path_factory.mktemp("clef") / "out"
    imageclef.write_files(out, judgments, CONCEPTS, IMAGES)
    files = sorted(p for p in out.rglob("*") if p.is_file())
    path = data.draw(st.sampled_from(files))
    damage = data.draw(st.sampled_from(["delete", "empty", "cut", "byte", "digits", "line"]))
    text = path.read_bytes()
    if damage == "delete":
        path.unlink()
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "cut":
        path.write_bytes(text[: data.draw(st.integers(0, max(0, len(text) - 1)))])
    elif damage == "byte":
        at = data.draw(st.integers(0, len(text)))
        path.write_bytes(text[:at] + data.draw(st.sampled_from([b"\xff", b" ", b"\n", b"/", b"x"])) + text[at:])
    elif damage == "digits":
        path.write_text(path.read_text().replace("0", "\u0660"))  # Arabic-Indic zero
    else:
        path.write_text(path.read_text() + data.draw(st.sampled_from(["sky 0.5\n", "25 1 1\n", "nan\n", "7\n"])))
    try:
        back, _, _ = imageclef.read_files(out)
    except imageclef.ImageClefError as exc:
        assert "\n" not in str(exc) and str(out) in str(exc)
    else:
        # Annotator names live in judges.txt and annotators.txt alone, with nothing to check them
        # against: a cut name ("a3" -> "a") reads as another name, on one image or on all. The
        # judgments themselves, image by image, must be intact.
        def contents(found: imageclef.Judgments) -> list:
            return sorted((i, sorted(c)) for m in found.values() for i, c in m.items())

        assert contents(back) == contents(judgments)


def test_a_non_canonical_image_name_is_a_reject_not_a_second_key(tmp_path: Path) -> None:
    judgments = {a: {"984": {"sky"}, "0984": {"sky"}} for a in ("a", "b", "c")}
    imageclef.write_files(tmp_path / "clef", judgments, ["sky"], ["984", "0984"])
    rows, rejects, report = imageclef.ingest_judgments(tmp_path / "clef", {"sky": 2}, [984])
    assert [(r["image_id"], r["annotator"]) for r in rows] == [(984, "a"), (984, "b"), (984, "c")]
    assert {r["key"] for r in rejects} == {"0984/a", "0984/b", "0984/c"}
    assert all("not written as an image id" in r["reason"] for r in rejects)
    assert report["a"] == {"seen": 2, "accepted": 1, "rejected": 1}


@settings(max_examples=30, deadline=None)
@given(judgment_sets, st.sets(st.sampled_from(["concepts.txt", "annotators.txt", "judges.txt", "raw", "clean"])))
def test_byte_order_marks_anywhere_read_as_without(
    tmp_path_factory: pytest.TempPathFactory, judgments: imageclef.Judgments, marked: set[str]
) -> None:
    """An editor's byte order mark at the start of any file (a list, a concept's raw or clean
    file) is removed: the files read as they do without it, never as a concept named '\\ufeffsky'."""
    images = [i for i in IMAGES if len(imageclef.judges(judgments, i)) >= imageclef.MIN_RAW_ANNOTATORS]
    if not images:
        return
    out = tmp_path_factory.mktemp("clef") / "out"
    imageclef.write_files(out, judgments, CONCEPTS, images)
    expected = imageclef.read_files(out)
    for name in marked:
        paths = list((out / "concepts" / name).glob("*.txt")) if name in ("raw", "clean") else [out / name]
        for path in (p for p in paths if p.is_file()):
            path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert imageclef.read_files(out) == expected


@settings(max_examples=40, deadline=None)
@given(judgment_sets, st.sampled_from(["fewer", "twice", "as written"]), st.integers(0, 4))
def test_annotators_txt_must_name_each_judge_once(
    tmp_path_factory: pytest.TempPathFactory, judgments: imageclef.Judgments, change: str, k: int
) -> None:
    """Without judges.txt, annotators.txt names the columns of every raw line: fewer names than
    judgments, or one name twice (two judges' votes merged into one annotator), is refused in one
    line naming the file; the file as written reads back."""
    full = every_image(judgments)
    out = tmp_path_factory.mktemp("clef") / "out"
    imageclef.write_files(out, full, CONCEPTS, IMAGES)
    (out / "judges.txt").unlink()
    names = (out / "annotators.txt").read_text().split()
    if change == "fewer":
        names.pop(k % len(names))
    elif change == "twice":
        names[k % len(names)] = names[(k + 1) % len(names)]
    (out / "annotators.txt").write_text("".join(f"{n}\n" for n in names))
    if change == "as written":
        assert imageclef.read_files(out)[0] == full
        return
    with pytest.raises(imageclef.ImageClefError) as refused:
        imageclef.read_files(out)
    text = str(refused.value)
    assert "\n" not in text and ("annotators.txt" in text or "judgments of image" in text), text
    if change == "twice":
        assert "annotators.txt" in text and "a name twice" in text

"""The leak audit's rules over generated releases: whatever the hidden and the visible sides share
(a whole-image mask, a shape drawn on both sides, a label, a count), the public side alone is no
leak; a value only the hidden side holds is one, wherever it is put."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.audit import leaks

SHAPES = ["0`0>0000000000", "abcdefgh12", "PPR1xyzzy0", "ZZZZ9999zz", "q0q0q0q0q0q0"]  # few: sides share them
LABELS = ["sky", "tree", "person"]


@dataclass
class Private:
    """What the audit reads of a private release: its tables (``arrow``) and manifest."""

    tables: dict[str, pa.Table]
    manifest: dict = field(default_factory=lambda: {"digest": "0" * 64, "evaluation_split": "test"})
    folder: Path = Path("private")

    def arrow(self, name: str, columns: list[str] | None = None) -> pa.Table:
        table = self.tables[name]
        return table.select(columns) if columns is not None else table


@st.composite
def releases(draw: st.DrawFn) -> tuple[Private, pa.Table]:
    """A private release of a few images, some on the hidden test side, their regions' masks and
    labels drawn from a few (so the sides share many); and its public regions."""
    n = draw(st.integers(2, 6))
    splits = draw(st.lists(st.sampled_from(["train", "test"]), min_size=n, max_size=n).filter(lambda s: "test" in s))
    rows = []
    for image_id in range(n):
        for region_id in range(draw(st.integers(1, 4))):
            rows.append(
                {"image_id": image_id, "region_id": region_id, "annotator": "a", "annotation_id": 100 * image_id + region_id,
                 "label": draw(st.sampled_from(LABELS)), "mask": {"size": [4, 4], "counts": draw(st.sampled_from(SHAPES))},
                 "geometry": draw(st.sampled_from([b"wkb-1", b"wkb-2", b"wkb-3"]))}
            )  # fmt: skip
    regions = pa.Table.from_pylist(rows)
    images = pa.table({"image_id": list(range(n)), "split": splits, "path": [f"test/{k}.jpg" for k in range(n)]})
    counted = regions.group_by("label").aggregate([("image_id", "count"), ("image_id", "count_distinct")])
    vocabulary = pa.table(
        {
            "label": counted["label"],
            "region_count": counted["image_id_count"],
            "image_count": counted["image_id_count_distinct"],
        }
    )
    hidden = {k for k, s in enumerate(splits) if s == "test"}
    public = regions.filter(pa.array([i not in hidden for i in regions["image_id"].to_pylist()]))
    return Private({"images": images, "regions": regions, "vocabulary": vocabulary}), public


@settings(max_examples=60, deadline=None)
@given(releases())
def test_what_the_sides_share_is_no_leak_and_the_hidden_side_s_own_is(made: tuple[Private, pa.Table]) -> None:
    private, public = made
    hidden = leaks.hidden_truth(private, "test")  # type: ignore[arg-type]
    visible = set(public["mask"].combine_chunks().field("counts").to_pylist())
    # the public regions, their masks in a report and in the card: nothing of the hidden side
    assert list(leaks._parquet("data/regions.parquet", public.drop_columns(["annotation_id"]), hidden)) == []
    assert list(leaks._json_leaks("results/x.json", {"masks": sorted(visible)}, hidden)) == []
    assert list(leaks._text_leaks("README.md", " ".join(sorted(visible)), hidden)) == []
    # a mask only the hidden side holds is found in a table, a report and the card
    own = sorted({c for c in private.arrow("regions")["mask"].combine_chunks().field("counts").to_pylist()} - visible)
    for counts in own:
        assert list(leaks._json_leaks("results/x.json", {"masks": [counts]}, hidden))
        assert list(leaks._text_leaks("README.md", f"see `{counts}`", hidden))
        assert list(leaks._text_leaks("README.md", leaks.mask_hash(counts), hidden))
    # every hidden region's row is found, whatever its mask
    regions = private.arrow("regions")
    rows = regions.filter(pa.array([i in set(hidden.images.to_pylist()) for i in regions["image_id"].to_pylist()]))
    assert list(leaks._parquet("data/extra.parquet", pa.concat_tables([public, rows]), hidden))


def test_an_unreadable_or_foreign_file_is_said(tmp_path: Path) -> None:
    """A file the audit cannot read is named, never passed over in silence."""
    (tmp_path / "manifest.json").write_text(json.dumps({"hidden": {"split": "test", "private": {"digest": "0" * 64}}}))
    (tmp_path / "data").mkdir()
    (tmp_path / "data/odd.parquet").write_bytes(b"not parquet")
    regions = pa.table(
        {"image_id": [0], "region_id": [0], "annotator": ["a"], "annotation_id": [1], "label": ["sky"],
         "mask": [{"size": [4, 4], "counts": "abcdefgh12"}], "geometry": [b"wkb"]}
    )  # fmt: skip
    private = Private(
        {"images": pa.table({"image_id": [0], "split": ["test"], "path": ["test/0.jpg"]}), "regions": regions,
         "vocabulary": pa.table({"label": ["sky"], "region_count": [1], "image_count": [1]})}
    )  # fmt: skip
    found = leaks.audit(tmp_path, private)  # type: ignore[arg-type]
    assert len(found) == 1 and found[0].startswith("data/odd.parquet: unreadable Parquet"), found

"""Spatial questions over a release (regionbench.release.query), against loops over every pair."""

import pandas as pd
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.release import query

LABELS = ["sky-blue", "man", "horse"]


@st.composite
def collections(draw: st.DrawFn) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Regions (boxes with labels, one annotator) over a few images, and random relations."""
    rows, rels = [], []
    for image_id in range(draw(st.integers(1, 3))):
        n = draw(st.integers(1, 5))
        for region_id in range(1, n + 1):
            x, y = draw(st.integers(0, 40)), draw(st.integers(0, 40))
            w, h = draw(st.integers(1, 12)), draw(st.integers(1, 12))
            rows.append(
                (image_id, region_id, draw(st.sampled_from(LABELS)), shapely.to_wkb(shapely.box(x, y, x + w, y + h)))
            )
        for a in range(1, n + 1):
            for b in range(1, n + 1):
                if a != b:
                    rels.append(
                        (image_id, a, b, draw(st.sampled_from(["adjacent", "disjoint"])),
                         draw(st.sampled_from(["beside", "x_aligned"])), draw(st.sampled_from(["above", "below", "y_aligned"])))
                    )  # fmt: skip
    regions = pd.DataFrame(rows, columns=["image_id", "region_id", "label", "geometry"])
    relations = pd.DataFrame(
        rels, columns=["image_id", "region_id", "other_region_id", "topological", "horizontal", "vertical"]
    )
    return regions, relations


@settings(max_examples=80, deadline=None)
@given(collections(), st.sampled_from(list(query.RELATIONS)), st.sampled_from(LABELS), st.sampled_from(LABELS))
def test_related_is_every_pair_that_holds(data, relation: str, subject: str, other: str) -> None:
    regions, relations = data
    label = {(r.image_id, r.region_id): r.label for r in regions.itertuples()}
    expected = sorted(
        (r.image_id, r.region_id, r.other_region_id)
        for r in relations.itertuples()
        if getattr(r, query.RELATIONS[relation]) == relation
        and label[r.image_id, r.region_id] == subject
        and label[r.image_id, r.other_region_id] == other
    )
    if {subject, other} <= set(regions["label"]):
        got = query.related(regions, relations, subject, relation, other)
        assert list(got.itertuples(index=False, name=None)) == expected
    else:
        with pytest.raises(query.QueryError, match="no region is labelled"):
            query.related(regions, relations, subject, relation, other)


@settings(max_examples=80, deadline=None)
@given(collections(), st.sampled_from(LABELS), st.sampled_from(LABELS), st.integers(0, 20))
def test_within_is_every_pair_closer_than_the_distance(data, subject: str, other: str, pixels: int) -> None:
    regions, _ = data
    if not {subject, other} <= set(regions["label"]):
        return
    expected = []
    for a in regions.itertuples():
        for b in regions.itertuples():
            if a.image_id == b.image_id and a.region_id != b.region_id and (a.label, b.label) == (subject, other):
                d = shapely.from_wkb(a.geometry).distance(shapely.from_wkb(b.geometry))
                if d <= pixels:
                    expected.append((a.image_id, a.region_id, b.region_id, d))
    got = query.within(regions, subject, other, pixels)
    assert list(got.itertuples(index=False, name=None)) == sorted(expected)


def test_questions_are_three_words_with_a_known_relation() -> None:
    assert query.parse("person above horse") == ("person", "above", "horse")
    for bad in ("person on horse", "person above", "a b c d"):
        with pytest.raises(query.QueryError, match="LABEL RELATION LABEL"):
            query.parse(bad)
    with pytest.raises(query.QueryError, match="0 or more pixels"):
        query.within(pd.DataFrame(columns=["image_id", "region_id", "label", "geometry"]), "a", "b", -1)


@settings(max_examples=30, deadline=None)
@given(collections(), st.sampled_from(list(query.RELATIONS)))
def test_a_release_without_relations_says_so_rather_than_answering_none(data, relation: str) -> None:
    """Regions that pair up in some image but no relation recorded between them: one line saying
    the release holds none, never an empty answer that would claim no pair is related."""
    regions, relations = data
    empty = relations.iloc[0:0]
    if not {LABELS[0], LABELS[1]} <= set(regions["label"]):
        with pytest.raises(query.QueryError, match="no region is labelled"):
            query.related(regions, empty, LABELS[0], relation, LABELS[1])
    elif (regions.groupby("image_id").size() >= 2).any():
        with pytest.raises(query.QueryError, match="holds no spatial relations"):
            query.related(regions, empty, LABELS[0], relation, LABELS[1])
    else:
        assert query.related(regions, empty, LABELS[0], relation, LABELS[1]).empty

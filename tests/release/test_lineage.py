"""Croissant's PROV lineage names what every release was derived from."""

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from regionbench.release import croissant
from regionbench.release.versions import tag_name


@given(
    synthetic=st.booleans(),
    url=st.one_of(st.none(), st.just("https://cocodataset.org")),
    previous=st.one_of(st.none(), st.sampled_from(["1.0.0", "2.3.1"])),
    digest=st.text("0123456789abcdef", min_size=64, max_size=64),
)
def test_a_release_is_derived_from_its_raw_collection_its_source_and_its_previous_version(
    synthetic: bool, url: str | None, previous: str | None, digest: str
) -> None:
    manifest = {
        "dataset": "d",
        "code_version": "0.1.0+abc",
        "inputs_sha256": digest,
        "synthetic": synthetic,
        "previous": {"version": previous, "required_bump": "minor"} if previous else None,
    }
    lineage = croissant._lineage(manifest, SimpleNamespace(url=url))
    derived = lineage["prov:wasDerivedFrom"]
    assert derived[0] == f"urn:sha256:{digest}"  # the raw collection, whatever else is known
    assert (url in derived) == (url is not None and not synthetic)  # a generated collection has no home page
    assert [d for d in derived if "-v" in d] == ([tag_name("d", previous)] if previous else [])

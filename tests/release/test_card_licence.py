"""The licence a release's Hugging Face card names: one the Hub lists, whatever the release's
licence is (an SPDX id the Hub knows, one it does not, terms in words, none stated), and
embedded photographs under another licence named beside it."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from regionbench.release.manifest import OTHER, UNKNOWN, card_licence

HUB = set((Path(__file__).parents[1] / "data/hub/licences.txt").read_text().split())
SPDX_LIKE = st.from_regex(r"[A-Za-z][A-Za-z0-9.+-]{0,30}", fullmatch=True)
LICENCES = st.one_of(SPDX_LIKE, st.sampled_from(sorted(HUB)), st.sampled_from(sorted(HUB)).map(str.upper))


@given(LICENCES, st.sampled_from(["paths", "embedded"]), st.booleans(), st.none() | SPDX_LIKE)
def test_a_card_names_a_licence_the_hub_lists(licence: str, images: str, synthetic: bool, source: str | None) -> None:
    manifest = {"license": licence, "images": images, "synthetic": synthetic, "source": {"license": source}}
    found = card_licence(manifest)
    assert found["license"] in HUB
    if found["license"] == OTHER:
        assert re.fullmatch(r"[a-z0-9][a-z0-9.-]*", found["license_name"])
    elif images == "embedded" and not synthetic:
        assert source == licence  # photographs under the release's own licence
    if licence.lower() in HUB and licence.lower() != OTHER and (images == "paths" or synthetic or source == licence):
        assert found == {"license": licence.lower()}  # the Hub's id, as the release states it


def test_what_the_hub_does_not_list_is_other_named_and_linked() -> None:
    assert card_licence({"license": "CC-BY-SA-2.5", "synthetic": False}) == {
        "license": "other",
        "license_name": "cc-by-sa-2.5",
        "license_link": "https://spdx.org/licenses/CC-BY-SA-2.5.html",
    }
    assert card_licence({"license": UNKNOWN, "synthetic": False}) == {"license": "unknown"}
    assert card_licence({"license": OTHER, "synthetic": False}) == {"license": "other", "license_name": "source-terms"}
    photographs = {"license": "CC-BY-4.0", "synthetic": False, "images": "embedded", "source": {"license": "Flickr"}}
    assert card_licence(photographs) == {"license": "other", "license_name": "cc-by-4.0-annotations-images-flickr"}

"""The site's colours: the labels (or, without labels, the regions) of one image never share a
colour, each keeps the colour it prefers where no earlier one took it, and a page is the same
every time it is written."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.client import view


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(min_size=1, max_size=6), unique=True, max_size=60),
    st.dictionaries(st.text(min_size=1, max_size=6), st.integers(0, len(view.PALETTE) - 1)),
)
def test_an_image_s_keys_never_share_a_colour(keys: list[str], preferred: dict[str, int]) -> None:
    colours = view.image_colours(keys, preferred)
    assert set(colours) == set(keys) and len(set(colours.values())) == len(keys)
    assert colours == view.image_colours(keys, preferred)  # the same page every time
    taken: set[str] = set()
    for key in keys:  # a key has its own colour unless an earlier key of the image took it
        own = view.PALETTE[preferred.get(key, 0)]
        if own not in taken:
            assert colours[key] == own
        taken.add(colours[key])
    assert all(c.startswith("#") and len(c) == 7 for c in colours.values())


def test_colours_past_the_palette_stay_apart() -> None:
    extra = [view.extra_colour(k) for k in range(300)]
    assert len(set(extra)) == 300 and not set(extra) & set(view.PALETTE)

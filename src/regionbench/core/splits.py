"""A collection's evaluation split: which of its own splits (``images.split``) its benchmark is
scored on. Decided once, by the build, and recorded in the release's manifest
(``evaluation_split``); the subsets' source split, ``evaluate``'s default side, the card, the
baselines and the site all read that one answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# A collection's own split taken as its evaluation split when the config names none, first found
# first: the split published figures are given on (BSDS500's test, VOC's and Cityscapes' val,
# ADE20K's validation, COCO's val2017 by the prefix rule).
TEST_SPLITS = ("test", "val", "validation")


def evaluation_split(
    splits: Iterable[str | None], wanted: str | None = None, declared: Sequence[str] = ()
) -> str | None:
    """The evaluation split among ``splits`` (the ``images.split`` of the images that have
    regions; None for an image without one).

    ``wanted`` (the config's ``subsets.test_split``) wins where some image has it. Otherwise the
    first of ``declared`` present (the layout's ``About.evaluation_splits``: the splits its
    benchmark publishes figures on), else the first of ``TEST_SPLITS`` present, else the one name
    starting with ``val`` (the first by name when several do); None when there is no such split.
    A collection may hold its evaluation split alone (BSDS500's test images as distributed): it
    is scored there all the same.
    """
    found = sorted({s for s in splits if s is not None})
    if wanted is not None:
        return wanted if wanted in found else None
    named = (
        [s for s in declared if s in found]
        or [s for s in TEST_SPLITS if s in found]
        or [s for s in found if s.startswith("val")]
    )
    return named[0] if named else None

"""Collections published in the COCO formats that a tree's own files identify (their ``info``):
their name, home page and the citation their authors ask for, as each distributes them. A
file that names none of them is an annotation tool's export, which cites nothing."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Known:
    """A collection: the host of its home page, a word its ``info.description`` carries, and
    what the card says of it."""

    host: str
    word: str
    name: str
    homepage: str
    citation: str


COLLECTIONS = (
    Known(
        "lvisdataset.org", "LVIS", "LVIS: A Dataset for Large Vocabulary Instance Segmentation",
        "https://www.lvisdataset.org/",
        "@inproceedings{gupta2019lvis, title={{LVIS}: A Dataset for Large Vocabulary Instance Segmentation}, "
        "author={Gupta, Agrim and Doll{\\'a}r, Piotr and Girshick, Ross}, booktitle={CVPR}, year={2019}}",
    ),
    Known(
        "cocodataset.org", "COCO", "Microsoft COCO: Common Objects in Context", "https://cocodataset.org/",
        "@inproceedings{lin2014microsoft, title={Microsoft {COCO}: Common Objects in Context}, author={Lin, "
        "Tsung-Yi and Maire, Michael and Belongie, Serge and Hays, James and Perona, Pietro and Ramanan, Deva "
        "and Doll{\\'a}r, Piotr and Zitnick, C. Lawrence}, booktitle={ECCV}, year={2014}}",
    ),
)  # fmt: skip


def identify(name: str | None, homepage: str | None) -> Known | None:
    """The collection a file's ``info`` (its ``description`` and ``url``) names, LVIS before COCO
    (LVIS files describe themselves over COCO's images); None for any other."""
    for known in COLLECTIONS:
        if (homepage and known.host in homepage.lower()) or (name and re.search(rf"\b{known.word}\b", name)):
            return known
    return None

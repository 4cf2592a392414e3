"""What a run scores, said the same way by every task: the first line of its output names the
scored side, and predictions for items outside it are refused in one line that says which side
is scored, how many predictions fall outside it and how to score them (``--split all``).

A prediction for something the scored side does not hold is never dropped without a word: a
run scored on the images it chose, or a figure computed on a part of what was given, is a
number a paper would print wrongly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from regionbench.core.errors import InputError

SPLITS = ("test", "source", "all")


class OutsideError(InputError):
    """Predictions for items of the release outside the scored side."""


@dataclass(frozen=True)
class Scope:
    """``count`` of the ``total`` ``unit`` (e.g. "images", "regions of subset H") are scored:
    ``side`` says which (e.g. "the test side of the image split"); ``split`` is what was asked
    (``test`` or ``all``); ``narrowed`` whether anything of the ``total`` is left out."""

    split: str
    side: str
    count: int
    total: int
    unit: str

    @property
    def narrowed(self) -> bool:
        return self.count < self.total

    def line(self) -> str:
        """The first line of a run's output."""
        hint = " (--split all scores every one)" if self.narrowed else ""
        return f"scored: {self.count} of {self.total} {self.unit}, {self.side}{hint}"

    def refuse(self, where: object, outside: int, what: str) -> OutsideError:
        """The one-line refusal of ``outside`` ``what`` (e.g. "detections on 12 images") that lie
        outside the scored side, ``where`` the predictions' path."""
        return OutsideError(
            f"{where}: {outside} {what} outside the scored side ({self.side}: {self.count} of {self.total} "
            f"{self.unit}); score them too with --split all, or leave them out"
        )

    def to_report(self) -> dict[str, Any]:
        return {"split": self.split, "side": self.side, "count": self.count, "total": self.total, "unit": self.unit}


def image_side(split: str, has_split: bool) -> str:
    """The words for the images a mask task scores."""
    if not has_split:
        return "every image (the release has no image split)"
    return "the test side of the image split" if split == "test" else "both sides of the image split"

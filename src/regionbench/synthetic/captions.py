"""Captions: the title, description and notes of a generated image, in the words of the
SAIAPR TC-12 annotation files, from its plan."""

from __future__ import annotations

import numpy as np

from regionbench.synthetic.plans import ImagePlan

_LOCATIONS = ["Cusco, Perú", "Bogotá, Colombia", "São Paulo, Brasil", "Zürich, Switzerland",
              "Córdoba, Argentina", "Cancún, México", "Melbourne, Australia", "Puerto Montt, Chile",
              "Quito, Ecuador", "La Paz, Bolivia"]  # fmt: skip
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]  # fmt: skip
_IRREGULAR = {"man": "men", "woman": "women", "child": "children", "person": "persons", "fish": "fish",
              "sheep": "sheep", "deer": "deer", "leaf": "leaves", "wolf": "wolves", "shelf": "shelves"}  # fmt: skip
_NUMBERS = ["", "", "two", "three", "four", "five", "six"]


def _plural(word: str) -> str:
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith(("s", "sh", "ch", "x")):
        return word + "es"
    if word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def caption_phrase(label: str, count: int) -> str:
    """How a caption mentions ``count`` regions of ``label`` (label words, hyphens as spaces)."""
    words = label.split("-")
    if count == 1:
        return ("an " if words[0][0] in "aeiou" else "a ") + " ".join(words)
    head = 0 if "of" in words else len(words) - 1  # "groups of persons", "blue skies"
    words[head] = _plural(words[head])
    return f"{_NUMBERS[min(count, 6)] or 'many'} {' '.join(words)}"


def _and(phrases: list[str]) -> str:
    return phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]


def caption_fields(plan: ImagePlan) -> dict[str, str]:
    """The caption of one image as IAPR TC-12 fields (title, description, notes, location, date)."""
    rng = np.random.default_rng([plan.image_id, 7])
    counts: dict[str, int] = {}
    kinds: dict[str, str] = {}
    for label, lk in zip(plan.labels, plan.looks, strict=True):
        counts[label] = counts.get(label, 0) + 1
        kinds[label] = lk.kind
    front = [caption_phrase(x, c) for x, c in counts.items() if kinds[x] != "backdrop"]
    back = [caption_phrase(x, c) for x, c in counts.items() if kinds[x] == "backdrop"]
    described = _and(front or back)
    if front and back:
        described += f" with {_and(back)} in the background"
    location = _LOCATIONS[int(rng.integers(len(_LOCATIONS)))]
    date = f"{_MONTHS[int(rng.integers(12))]} {int(rng.integers(1995, 2006))}"
    return {
        "title": f"{plan.scene.capitalize()} scene in {location.split(',')[0]}",
        "description": f"{described[0].upper() + described[1:]}; the photo was taken on a trip.",
        "notes": "",
        "location": location,
        "date": date,
    }


# ---------------------------------------------------------------------------------------------
# Annotators: how several people trace one scene.

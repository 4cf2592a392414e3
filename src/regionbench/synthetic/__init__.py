"""Synthetic collections: ``plans`` plans them (profiles, each image's labels), ``looks`` gives
each label its look, ``rendering`` draws the scenes, ``traces`` reads them as several annotators
would, ``captions`` words them; one module here per raw layout writes them as that layout's
files. A module names its layout in ``LAYOUT``, writes
through ``generate`` and says in ``annotators(requested)`` how many annotators its trees have,
and with ``OWN_CATEGORIES = True`` that its trees name their format's classes (a build derives
its vocabulary from them); a layout without a module has no generated trees."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

from regionbench.core.errors import InputError


@dataclass(frozen=True)
class Options:
    """How a collection is generated: ``seed``; ``quirks`` of the real files to inject (the
    layouts that have them); ``annotators`` tracing every scene with ``disagreement`` in [0, 1]
    (the layouts of several annotators); ``vocabulary`` (folder of hierarchy.yaml and
    label_ids.tsv; None: the library's); ``workers`` rendering processes (None: every core)."""

    seed: int = 0
    quirks: bool = False
    annotators: int = 3
    disagreement: float = 0.3
    vocabulary: str | Path | None = None
    workers: int | None = None


@cache
def writers() -> dict[str, ModuleType]:
    """Layout name -> the module that generates collections in it (each module with a
    ``LAYOUT``; the modules that plan and draw the scenes have none)."""
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "LAYOUT"):
            if missing := [name for name in ("generate", "annotators") if not callable(getattr(module, name, None))]:
                raise InputError(f"{module.__name__}: a writer of {module.LAYOUT} trees without {', '.join(missing)}")
            found[module.LAYOUT] = module
    return found


def own_categories(layout: str) -> bool:
    """Whether generated trees of ``layout`` name their format's own classes (a writer's
    ``OWN_CATEGORIES``), from which a build derives its vocabulary, rather than the library
    vocabulary's labels (``Options.vocabulary``)."""
    return bool(getattr(writers().get(layout), "OWN_CATEGORIES", False))


def generate(layout: str, out: str | Path, profile: str, options: Options = Options()) -> Iterator[tuple[str, int]]:
    """Write the collection of ``profile`` under ``out`` in ``layout``; yields (part written,
    regions in it) as parts finish. Raises InputError for a layout without generated trees."""
    if layout not in writers():
        raise InputError(f"no synthetic collections in the {layout} layout; choose one of {', '.join(writers())}")
    return writers()[layout].generate(out, profile, options)

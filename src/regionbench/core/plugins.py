"""Registries of drop-in modules (the layouts of ``regionbench.io``, the tasks of
``regionbench.scoring.tasks``): a new one is one file. Every public module of a package is
imported in name order and what it offers is held to a contract; a module that cannot be
imported or breaks the contract is refused in one line that names it."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import TypeVar

from regionbench.core import errors

T = TypeVar("T")


def scan(
    package: ModuleType,
    offered: Callable[[ModuleType], T | None],
    problems: Callable[[T], list[str]],
    contract: str,
    refuse: Callable[[str], Exception],
) -> Iterator[tuple[str, T]]:
    """(module name, what it offers) for every public module of ``package`` in name order that
    offers something (``offered``: the member the contract is about, None for a module that
    offers nothing). ``refuse(line)``, raised: a module that cannot be imported, or whose offer
    has ``problems``, named with ``contract`` and where to read it (``package``'s docstring)."""
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        where = f"{package.__name__}.{info.name}"
        try:
            module = importlib.import_module(where)
        except Exception as exc:  # a dropped-in module's own error: one line naming it
            raise refuse(
                f"{where}: breaks the {contract}: cannot be imported ({type(exc).__name__}: {errors.first_line(exc)})"
            ) from None
        if (offer := offered(module)) is None:
            continue
        if said := problems(offer):
            raise refuse(f"{where}: breaks the {contract} ({'; '.join(said)}); see {package.__name__}")
        yield info.name, offer


def named(found: Mapping[str, T], name: str, what: str, refuse: Callable[[str], Exception]) -> T:
    """The registry entry ``name`` of ``found``; ``refuse(line)``, raised, naming the entries
    otherwise (``what``: what an entry is, "task", "baseline")."""
    if name not in found:
        raise refuse(f"{what} {name!r}: use {', '.join(found)}")
    return found[name]

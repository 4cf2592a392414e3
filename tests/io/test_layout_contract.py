"""The Layout contract is the code: every registered layout keeps it, and a layout that breaks
it is caught by the registry at run time (and by the type checker before: tests/lint)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

import pytest
from layouts.tree import LAYOUT_FILE, wrong_copy

from regionbench.io import layouts
from regionbench.io.shards import IngestError


def _module(path: Path) -> object:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(layouts.registry()))
def test_every_registered_layout_keeps_the_contract(name: str) -> None:
    layout = layouts.get(name)
    assert isinstance(layout, layouts.Layout)
    assert layouts.contract_problems(layout) == []


def test_capabilities_are_what_the_layouts_claim() -> None:
    claimed = {
        name: sorted(c.__name__ for c in layouts.CAPABILITIES if isinstance(layout, c))
        for name, layout in layouts.registry().items()
    }
    assert claimed["coco"] == ["DescribesSource", "Exports", "KeepsSourceFiles", "NamesCategories", "PreparesPieces"]
    assert "KeepsSourceFiles" in claimed["coco-panoptic"]
    assert claimed["saiapr"] == ["Exports", "NamesCategories", "PublishesMeasures"]


def test_the_test_layout_keeps_the_contract() -> None:
    assert layouts.contract_problems(_module(LAYOUT_FILE).LAYOUT) == []


def test_a_wrong_signature_is_found_at_run_time(tmp_path: Path) -> None:
    layout = _module(wrong_copy(tmp_path)).LAYOUT
    assert layouts.contract_problems(layout) == ["shards(root) should be shards(root, shard_size)"]


def test_the_registry_refuses_a_layout_that_breaks_the_contract(
    tmp_path: Path, drop_in_layout: Callable[[Path], None]
) -> None:
    drop_in_layout(wrong_copy(tmp_path))
    with pytest.raises(IngestError, match=r"regionbench.io.labelmap: breaks the Layout contract"):
        layouts.registry()

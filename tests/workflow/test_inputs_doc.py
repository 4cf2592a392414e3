"""docs/inputs.md opens with one config per layout: each is a test build's own config (its
dataset name and tree aside), and that build reads its tree in the layout the page names."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from farm import BUILDS, CONFIGS, Built

ROOT = Path(__file__).resolve().parents[2]
# What a test build may add to the documented lines: what runs, not how the tree is read.
TEST_ONLY = {"classifiers", "reference_annotator", "baselines", "challenge"}
# Collections of class maps read through the classmap build's workflow path: their read and
# export are checked in-process (io/test_class_map_collections.py), not by a build each.
IN_PROCESS = {"camvid", "lip", "cocostuff", "labelme", "mapillary", "pascal-context"}


def documented() -> list[tuple[str, str, dict]]:
    """(layout, test build, config) of each block of the page's first section."""
    text = (ROOT / "docs/inputs.md").read_text()
    section = text.split("## One config per layout", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"\*\*([\w-]+)\*\*: .*?\(test build `([\w-]+)`\)\n\n```yaml\n(.*?)```", section, re.S)
    return [(layout, build, yaml.safe_load(config)) for layout, build, config in found]


def test_every_layout_has_its_config() -> None:
    from regionbench.io import layouts

    blocks = documented()
    assert sorted(layout for layout, _, _ in blocks) == sorted(layouts.registry())
    for _, build, config in blocks:
        assert build in BUILDS and set(config) - {"layout"} == {"dataset", "raw_dir"}


@pytest.mark.parametrize(("layout", "build", "config"), documented(), ids=lambda v: v if isinstance(v, str) else "")
def test_each_config_builds_its_layout(
    release: Callable[[str], Built], tmp_path: Path, layout: str, build: str, config: dict
) -> None:
    """Each documented config is its test build's (what runs aside), and the build's tree is read
    as the layout the page names: built, or, for the class-map collections whose build would
    check no workflow behaviour the classmap build does not, detected and ingested in-process."""
    ours = yaml.safe_load((CONFIGS / f"{build}.yaml").read_text())
    assert ours["raw_dir"] == "$RAW"
    extra = {k: v for k, v in ours.items() if k not in ("dataset", "raw_dir")}
    assert {k: v for k, v in extra.items() if k not in TEST_ONLY} == {k: v for k, v in config.items() if k == "layout"}
    if build in IN_PROCESS:
        from layouts.in_process import released

        from regionbench.io import layouts

        root = tmp_path / "raw"
        BUILDS[build].write_tree(root)
        assert config.get("layout", layouts.detect(root).name) == layout
        tables = released(root, layout)
        assert tables.arrow("rejects").num_rows == 0 and tables.arrow("regions").num_rows > 0
        return
    manifest = json.loads((release(build).folder / "manifest.json").read_text())
    assert manifest["layout"] == layout

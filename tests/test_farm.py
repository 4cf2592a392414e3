"""The release farm's list is whole: a config file a build, a build a config file; a build that
writes its raw tree names it (``$RAW``) and the others do not; every config is a valid build
configuration over the workflow's own, the test profile under it where the build takes it."""

from __future__ import annotations

from pathlib import Path

import farm
import pytest
from conftest import PROJECT

from regionbench.pipeline import config as build_config


def test_every_config_is_a_build_and_every_build_a_config() -> None:
    files = {path.stem for path in farm.CONFIGS.glob("*.yaml")} - {farm.PROFILE.stem}
    assert files == set(farm.BUILDS)


@pytest.mark.parametrize("name", sorted(farm.BUILDS))
def test_each_config_validates_and_names_its_tree(name: str, tmp_path: Path) -> None:
    text = (farm.CONFIGS / f"{name}.yaml").read_text()
    assert text.startswith("# "), "a build's config says first what the build is for"
    assert ("$RAW" in text) == (farm.BUILDS[name].tree is not None)
    override = tmp_path / "override.yaml"
    override.write_text(farm.config_text(name, tmp_path / "raw") if "$RAW" in text else text)
    layers = [farm.PROFILE, override] if farm.BUILDS[name].profile else [override]
    config, sources = build_config.load_layers(PROJECT, layers)
    build_config.validate(config, PROJECT / "schemas" / "config.schema.yaml", sources)

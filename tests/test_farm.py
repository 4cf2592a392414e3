"""The release farm's list is whole: a config file a build, a build a config file; a build that
writes its raw tree names it (``$RAW``) and the others do not; every config is a valid build
configuration over the workflow's own, the test profile under it where the build takes it."""

from __future__ import annotations

from pathlib import Path

import farm
import pytest
import yaml
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


def test_every_farm_build_runs_the_optional_stages_its_layout_defaults_to(tmp_path: Path) -> None:
    """A build never fails for an optional stage, so every farm build runs its layout's reference
    methods as a user's build would (``baselines: auto`` or the methods it names): the test profile
    turns none of them off, and no build's config does. A layout whose baselines cannot run on a
    tree (no train side, no humans) is then built by the farm with them and must publish."""
    assert "baselines" not in yaml.safe_load(farm.PROFILE.read_text())
    for name in sorted(farm.BUILDS):
        text = farm.config_text(name, tmp_path / "raw") if farm.BUILDS[name].tree is not None else None
        settings = yaml.safe_load(text if text is not None else (farm.CONFIGS / f"{name}.yaml").read_text())
        methods = (settings.get("baselines") or {}).get("methods", "auto")
        assert methods == "auto" or (isinstance(methods, list) and methods), f"{name} turns its baselines off"

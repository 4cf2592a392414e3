"""Defaults live in the config schema: the validation fills them, and the library's settings
objects start from the same values, so a build and a library call agree."""

from pathlib import Path

import yaml

from regionbench.core.relations import RelationSettings
from regionbench.pipeline import config as build_config
from regionbench.pipeline.consensus import ConsensusSettings
from regionbench.pipeline.ingest import IngestSettings
from regionbench.synthetic import Options

PROJECT = Path(__file__).resolve().parents[1]
SCHEMA = PROJECT / "schemas" / "config.schema.yaml"


def _minimal() -> dict:
    """The demo config without every setting the schema gives a default."""
    cfg = yaml.safe_load((PROJECT / "config" / "config.yaml").read_text())
    del cfg["relations"]
    cfg["ingest"] = {"strict": cfg["ingest"]["strict"]}
    return cfg


def test_validation_fills_every_default_nested_ones_too() -> None:
    cfg = _minimal()
    build_config.validate(cfg, SCHEMA)
    assert cfg["relations"] == {"tau": 0.1, "adjacency_px": 1, "max_regions": 100}
    assert cfg["agreement"] == {"min_iou": 0.5, "consensus": "majority"}
    assert cfg["ingest"]["shard_size"] is None and cfg["category_map"] == {}
    assert cfg["layout"] is None and cfg["vocabulary_dir"] is None and cfg["reference_annotator"] is None
    assert cfg["synth"]["layout"] == "saiapr" and cfg["synth"]["annotators"] == 3


def test_a_given_setting_is_kept() -> None:
    cfg = _minimal() | {"agreement": {"min_iou": 0.7}}
    build_config.validate(cfg, SCHEMA)
    assert cfg["agreement"] == {"min_iou": 0.7, "consensus": "majority"}


def test_the_library_settings_start_from_the_schema_defaults() -> None:
    cfg = _minimal()
    build_config.validate(cfg, SCHEMA)
    assert RelationSettings() == RelationSettings.from_config(cfg["relations"])
    assert ConsensusSettings() == ConsensusSettings.from_config(cfg["agreement"])
    defaults = IngestSettings.from_config(cfg["ingest"] | {"strict": False}, cfg["category_map"])
    assert IngestSettings() == defaults
    synth = cfg["synth"]
    assert (Options().annotators, Options().disagreement) == (synth["annotators"], synth["disagreement"])

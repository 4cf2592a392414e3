"""Build configuration: the default ``config/config.yaml`` merged with overrides, validated.

Snakemake validates the same schema when it parses the Snakefile; checking here first lets
``regionbench build`` report a bad setting in one line instead of a Snakemake traceback.
"""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml


class ConfigError(ValueError):
    """A configuration that violates its schema; the message names the key and the fix."""


def merge(base: dict, override: dict) -> dict:
    """Recursive dict update, as Snakemake merges several ``--configfile``s."""
    out = dict(base)
    for key, value in override.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def load(project: Path, overrides: list[Path] = ()) -> dict:
    """The effective configuration of a build: defaults, then each override in order."""
    config = yaml.safe_load((project / "config" / "config.yaml").read_text(encoding="utf-8"))
    for path in overrides:
        if not path.is_file():
            raise ConfigError(f"{path}: config file not found")
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: a config file must hold a mapping of settings")
        config = merge(config, data)
    return config


def validate(config: dict, schema_path: Path, source: str = "config") -> None:
    """Raise ConfigError with one line (where, what, how to fix) if ``config`` breaks the schema."""
    schema = yaml.safe_load(schema_path.read_text(encoding="utf-8"))
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(config))
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
        raise ConfigError(f"{source}: {where}: {error.message}; see {schema_path.name} for allowed values")

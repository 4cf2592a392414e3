"""Build configuration: the default ``config/config.yaml`` merged with overrides, validated.

Snakemake validates the same schema when it parses the Snakefile; checking here first lets
``regionbench build`` report a bad setting in one line, naming the file that set it, instead
of a Snakemake traceback. YAML is read strictly: UTF-8, no key given twice, finite numbers.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema

from regionbench.core import errors, yamlfile
from regionbench.core.errors import InputError

# The schema's formats are checked too (a release date must be a day of the calendar).
FORMATS = jsonschema.Draft202012Validator.FORMAT_CHECKER


if TYPE_CHECKING:  # a type only: the layouts need the build's image libraries
    from regionbench.io.layouts import Layout


class ConfigError(InputError):
    """A configuration that violates its schema; the message names the file, the key and the fix."""


def read_yaml(path: Path) -> object:
    """The settings of one YAML file, or a ConfigError naming the file, the line and the fix."""
    return yamlfile.read(path, ConfigError, "config file")


def merge(base: dict, override: dict) -> dict:
    """Recursive dict update, as Snakemake merges several ``--configfile``s."""
    out = dict(base)
    for key, value in override.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


class Layers(list):
    """The config files of a build in order, as (name, settings): which one set a value."""

    def source_of(self, path: tuple) -> str:
        """The last file that sets ``path`` (or, when none sets all of it, the deepest part)."""
        best, depth = self[0][0] if self else "config", -1
        for name, data in self:
            node, reached = data, 0
            for key in path:
                if not isinstance(node, dict) or key not in node:
                    break
                node, reached = node[key], reached + 1
            if reached >= depth:
                best, depth = name, reached
        return best


def load_layers(project: Path, overrides: Sequence[Path] = ()) -> tuple[dict, Layers]:
    """The effective configuration (defaults, then each override in order) and its layers."""
    layers = Layers()
    config: dict = {}
    for path in [Path(project) / "config" / "config.yaml", *overrides]:
        if problem := errors.file_problem(path, "a config file"):
            raise ConfigError(f"{path}: {problem}")
        data = read_yaml(path)
        if data is None or data == {}:  # Snakemake refuses such a file, with no word of which
            raise ConfigError(f"{path}: an empty config file; give the settings to change (dataset: ..., raw_dir: ...)")
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: a config file must hold a mapping of settings")
        layers.append((str(path), data))
        config = merge(config, data)
    return config, layers


def load(project: Path, overrides: Sequence[Path] = ()) -> dict:
    """The effective configuration of a build: defaults, then each override in order."""
    return load_layers(project, overrides)[0]


def _non_finite(value: object, path: tuple = ()) -> tuple | None:
    """The path of the first NaN or infinite number in ``value``, if any."""
    if isinstance(value, float) and not math.isfinite(value):
        return path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if (found := _non_finite(item, (*path, key))) is not None:
            return found
    return None


def _with_defaults(validator_class: Any) -> Any:
    """A validator class that also fills every absent property that has a ``default`` in the
    schema, nested ones too (the pattern of the jsonschema FAQ, as Snakemake's ``validate``)."""
    check_properties = validator_class.VALIDATORS["properties"]

    def properties(validator, wanted, instance, schema):
        if isinstance(instance, dict):
            for name, sub in wanted.items():
                if "default" in sub:
                    instance.setdefault(name, copy.deepcopy(sub["default"]))
        yield from check_properties(validator, wanted, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": properties})


DefaultsValidator = _with_defaults(jsonschema.Draft202012Validator)


def validate(config: dict, schema_path: Path, source: str | Layers = "config") -> None:
    """Raise ConfigError with one line (file, key, what, how to fix) if ``config`` breaks the
    schema or holds a NaN or infinite number; ``source`` names the file, or the ``Layers`` to
    find the one that set the faulty value. Every setting the schema gives a ``default`` and
    ``config`` lacks is filled in, in place: the one place defaults are applied."""

    def where(path: tuple) -> str:
        name = source.source_of(path) if isinstance(source, Layers) else source
        return f"{name}: {'.'.join(str(p) for p in path) or '(top level)'}"

    if (bad := _non_finite(config)) is not None:
        raise ConfigError(f"{where(bad)}: not a finite number; give a number such as 0.5")
    schema = yamlfile.read(schema_path)
    error = jsonschema.exceptions.best_match(DefaultsValidator(schema, format_checker=FORMATS).iter_errors(config))
    if error is not None:
        raise ConfigError(
            f"{where(tuple(error.absolute_path))}: {error.message}; see {schema_path.name} for allowed values"
        )
    release = config.get("release") or {}
    if release.get("publish"):
        check_publication(release.get("statements") or {}, where(("release", "publish")))
    check_baselines((config.get("baselines") or {}).get("methods", "auto"), where(("baselines", "methods")))


def check_baselines(methods: object, source: str) -> None:
    """Every name of a configured ``baselines.methods`` list must be a reference method's; else
    a ConfigError naming the first unknown and the methods there are."""
    from regionbench import baselines

    for name in methods if isinstance(methods, list) else []:
        try:
            baselines.get(name)
        except baselines.BaselineError as exc:
            raise ConfigError(f"{source}: {exc}") from None


def check_publication(statements: dict, source: str) -> None:
    """A release for publication (``release.publish``) must have said what ``rai.REQUIRED_TO_PUBLISH``
    lists in ``statements`` (``release.statements``); else a ConfigError naming the first unset."""
    from regionbench.release import rai  # Arrow's: only a publication asks

    if unset := rai.unset_for_publication(statements):
        raise ConfigError(
            f"{source}: a release for publication, but release.statements.{unset[0]} is "
            f"unset; {rai.REQUIRED_TO_PUBLISH[unset[0]]} in release.statements, or build without release.publish"
        )


VOCABULARY_FILES = ("hierarchy.yaml", "label_ids.tsv", "h_list.txt", "t_list.txt", "curation.yaml")


def check_vocabulary_dir(config: dict, source: str = "config") -> None:
    """A configured ``vocabulary_dir`` must be a folder holding the five vocabulary files."""
    folder = config.get("vocabulary_dir")
    if folder is None:
        return
    path = Path(folder)
    if not path.is_dir():
        raise ConfigError(f"{source}: vocabulary_dir {folder!r} is not a folder; check the path")
    missing = [name for name in VOCABULARY_FILES if not (path / name).is_file()]
    if missing:
        raise ConfigError(
            f"{source}: vocabulary_dir {folder!r} lacks {', '.join(missing)}; "
            "write the folder with regionbench vocabulary from-source, or copy the library's"
        )


def raw_layout(config: dict[str, Any], source: str = "config") -> Layout | None:
    """The layout of the configured ``raw_dir`` (None: no raw_dir, the build generates its tree):
    the configured ``layout``, or else the one detected, once the folder is checked to be an
    absolute path holding a readable tree of it. The command line's check and the workflow's
    raw tree both ask this."""
    from regionbench.io import layouts  # a build's concern: readers of releases need no image library
    from regionbench.io.shards import IngestError

    raw = config.get("raw_dir")
    if raw is None:
        return None
    path = Path(raw)
    if not path.is_absolute():
        raise ConfigError(f"{source}: raw_dir {raw!r} is relative; give the absolute path of the raw tree")
    if not path.exists():
        raise ConfigError(f"{source}: raw_dir {raw!r} does not exist; check the path")
    if not path.is_dir():
        raise ConfigError(f"{source}: raw_dir {raw!r} is a file; give the folder of the raw tree")
    try:
        named = layouts.get(config["layout"]).name if config.get("layout") else None
    except IngestError as exc:
        raise ConfigError(f"{source}: layout: {exc}") from None
    try:
        layout = layouts.detect(path, named)
    except IngestError as exc:
        message = str(exc).replace(str(path), f"raw_dir {raw!r}", 1)
        raise ConfigError(f"{source}: {message}") from None
    try:
        layout.check(path)
    except IngestError as exc:
        raise ConfigError(f"{source}: raw_dir {raw!r} {exc}") from None
    return layout

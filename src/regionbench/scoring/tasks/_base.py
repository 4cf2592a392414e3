"""What every task shares: its settings (a frozen dataclass whose fields are its command-line
options), the run it scores, and its one error type."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np
import shapely

from regionbench import release
from regionbench.core import numbers
from regionbench.core.hierarchy import Hierarchy, Node
from regionbench.release.loader import Release
from regionbench.scoring.errors import TaskError as TaskError  # the tasks' one error, below the readers


def option(default: Any, flag: str, help: str, aliases: tuple[str, ...] = (), **argparse_options: Any) -> Any:
    """A settings field that is the command-line option ``flag`` (``help`` its line of help;
    ``aliases``: other spellings it keeps; ``argparse_options``: ``type``, ``choices``,
    ``metavar``, ``action``)."""
    metadata = {"flag": flag, "aliases": aliases, "help": help, "argparse": argparse_options}
    return field(default=default, metadata=metadata)


# A settings field's former name -> its name: a report written before the rename re-opens, and a
# caller of ``evaluate`` that still says it is understood.
RENAMED = {"protocol": "method"}


positive_int = numbers.argument(int, 1)  # argparse types, strictly parsed (``core.numbers``)
natural = numbers.argument(int, 0)
unit_interval = numbers.argument(float, 0, 1)


S = TypeVar("S", bound="Settings")


@dataclass(frozen=True)
class Method:
    """One way a task scores a run (``--method NAME``), as a benchmark's own tool scores it: its
    name, its line of help, and the settings fields only it takes (``options``: given with
    another method they would change nothing, so they are refused in one line). A task lists its
    methods in its ``Settings.methods``; ``evaluate --task NAME --help`` shows each with its
    options."""

    name: str
    summary: str
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class Settings:
    """The settings every task takes. A task's own ``Settings`` subclasses this (or a family's
    subclass of it) with its own fields, each an ``option``: the command line, the report's
    ``settings`` and ``view``'s rerun all derive from the fields."""

    split: str = option(
        "test",
        "--split",
        "score the test side of the split, the source's own evaluation split (source: its annotated test or its "
        "val split; the map tasks' default where the release has one), or every image (all); every task names what it "
        "scored first",
        choices=["test", "source", "all"],
    )
    annotator: str | None = option(
        None, "--annotator", "score against this annotator (default: the reference annotator)"
    )

    methods: ClassVar[tuple[Method, ...]] = ()  # a task with several ways of scoring names them

    def resolve(self: S, data: Release) -> S:
        """These settings with what they leave to the release filled in (e.g. the reference
        annotator): what the report keeps and a rerun reads back."""
        return self

    def method_problem(self) -> str | None:
        """Where an option of one method (``Method.options``) is given with another (``method``,
        resolved): the line that says so, else None."""
        chosen = getattr(self, "method", None)
        fields = {f.name: f for f in dataclasses.fields(self)}
        for method in self.methods:
            for name in method.options:
                f = fields[name]
                if method.name != chosen and getattr(self, name) != f.default:
                    return (
                        f"{f.metadata['flag']} is an option of --method {method.name}, not of --method {chosen}; "
                        f"drop it, or score with --method {method.name}"
                    )
        return None

    def to_report(self) -> dict[str, Any]:
        """The settings as JSON values: a path by its name, a tuple as a list."""
        return {f.name: _jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_report(cls: type[S], values: Mapping[str, Any]) -> S:
        """The settings a report's ``settings`` holds (``to_report``): lists back to tuples, a
        path field's name back to a path; a field it lacks keeps its default, a value it cannot
        take is a ``TaskError``."""
        hints = typing.get_type_hints(cls)
        values = renamed(values)
        given: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name in values:
                value = _from_json(values[f.name])
                paths = hints[f.name] is Path or Path in typing.get_args(hints[f.name])
                given[f.name] = Path(value) if paths and isinstance(value, str) else value
        try:
            return cls(**given)
        except TypeError as exc:
            raise TaskError(f"the report's settings are not this version's ({exc})") from None

    @classmethod
    def options(cls) -> list[dataclasses.Field[Any]]:
        """The fields this class declares itself (not its bases'): its own command-line options."""
        inherited = {
            f.name for base in cls.__mro__[1:] if dataclasses.is_dataclass(base) for f in dataclasses.fields(base)
        }
        return [f for f in dataclasses.fields(cls) if f.name not in inherited]


def renamed(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` (settings by field name) with former field names (``RENAMED``) under today's."""
    return {RENAMED.get(k, k) if RENAMED.get(k) not in values else k: v for k, v in values.items()}


def _from_json(value: Any) -> Any:
    return tuple(_from_json(v) for v in value) if isinstance(value, list) else value


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return value.name
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Resampled(Settings):
    """The options of a task whose headline measures carry a bootstrap interval over images
    (``measures.bootstrap``): how many resamples and their seed."""

    resamples: int = option(
        1000, "--resamples", "bootstrap resamples over images for each headline measure's 95%% interval; 0: none",
        type=natural, metavar="B",
    )  # fmt: skip
    seed: int = option(0, "--seed", "the seed of the resamples (numpy's default_rng)", type=natural, metavar="S")


@dataclass(frozen=True)
class Run(Generic[S]):
    """One scoring: the release and its hierarchy, the predictions' path, the task's settings
    (resolved against the release), what the task's ``read`` made of the predictions, and the
    processes it may use (a figure never depends on them)."""

    data: Release
    tree: Hierarchy
    predictions: Path
    settings: S
    given: Any = None
    cores: int = 1


def release_hierarchy(data: Release) -> Hierarchy:
    """The label hierarchy a release carries in its vocabulary table (parents, relations)."""
    vocabulary = data.vocabulary
    roots = sorted(set(vocabulary["parent"].dropna()) - set(vocabulary["label"]))
    if len(roots) != 1:
        raise TaskError(f"the release's vocabulary has roots {roots}; expected exactly one")
    nodes = {roots[0]: Node(roots[0], None)}
    row: Any  # a row of the vocabulary table (pandas types its fields loosely)
    for row in vocabulary.itertuples(index=False):
        nodes[row.label] = Node(row.label, row.parent, row.relation or "is-a", bool(row.group))
    return Hierarchy(roots[0], nodes)


def predictions_digest(path: Path) -> str:
    """sha256 of a predictions file, or over the relative path and sha256 of every file of a
    predictions folder: the report names what it scored, and ``view`` draws only that."""
    return release.sha256_file(path) if path.is_file() else release.fingerprint_tree(path)


@dataclass(frozen=True)
class Shape:
    """One predicted shape ``view`` draws beside the truth: a boolean ``mask`` of the image, a
    detection's COCO ``rle`` (decoded when drawn: a run holds up to 100 an image), or a COCO
    ``box`` (x, y, w, h) where a detection has no mask; its ``label`` (None for a segment) and
    ``facts`` (figures by name)."""

    label: str | None
    mask: np.ndarray | None = None
    rle: dict[str, Any] | None = None
    box: tuple[float, float, float, float] | None = None
    facts: dict[str, Any] = field(default_factory=dict)

    def polygon(self) -> shapely.Geometry | None:
        """The shape's exact polygon (pixel squares; a box as it is), None when it is empty."""
        from regionbench.core import geometry

        if self.rle is not None:
            from pycocotools import mask as coco_mask

            mask = coco_mask.decode(self.rle).astype(bool)
            box = [int(v) for v in coco_mask.toBbox(self.rle)]  # from the runs: no scan of the mask
            return geometry.mask_to_polygon(mask, (box[0], box[1], box[2], box[3])) if box[2] and box[3] else None
        if self.mask is not None:
            return geometry.mask_to_polygon(self.mask) if self.mask.any() else None
        left, top, width, height = self.box or (0.0, 0.0, 0.0, 0.0)
        return shapely.box(left, top, left + width, top + height) if width > 0 and height > 0 else None

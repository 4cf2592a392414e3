"""The release farm: every release the tests build, named once, built once a session.

Each build is a config under ``tests/configs/<name>.yaml`` and, where it reads a raw tree on
disk, the function below that writes that tree (the config's ``raw_dir: $RAW`` names it). The
session fixture ``release`` (conftest.py) builds a name the first time a test asks for it, on
whichever pytest-xdist worker asks first (the others wait on a file lock), and hands every test
the same folder: read-only (the session checks its files at the end), so a test that changes a
release copies it first.

Builds that check something other than the whole recipe start from ``configs/profile.yaml``
(``profile: true`` below): the audits and classifiers sized to a tree of a few images. ``tiny``
runs the whole recipe as ``make release`` does, on the tiny generated collection.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

CONFIGS = Path(__file__).resolve().parent / "configs"
PROFILE = CONFIGS / "profile.yaml"


@dataclass(frozen=True)
class Build:
    """A farm build: the raw tree it reads (``tree(folder)`` writes it; None: the workflow
    generates its own, ``synth`` in the config) and whether it starts from the test profile."""

    tree: Callable[[Path], object] | None = None
    profile: bool = True


@dataclass(frozen=True)
class Built:
    """A farm build's outcome: the workflow copy that built it, its release folder, the raw tree
    it read (the generated one under ``resources/raw`` when it had none) and what the build
    printed."""

    name: str
    project: Path
    folder: Path
    raw: Path
    stdout: str
    stderr: str

    @property
    def results(self) -> Path:
        """The build's intermediate results (``results/<dataset>``)."""
        return self.project / "results" / self.folder.parent.name


def _generated(module: str, images: int, seed: int, size: tuple[int, int]) -> Callable[[Path], None]:
    """A tree of ``images`` images written by ``regionbench.synthetic.<module>.write_tree``."""

    def write(root: Path) -> None:
        import importlib

        list(importlib.import_module(f"regionbench.synthetic.{module}").write_tree(root, images, seed, size))

    return write


def _voc(root: Path) -> None:
    """VOC's tree of 18 images and a JPEG without maps (VOC annotates it for detection only)."""
    _generated("voc", 18, 3, (120, 90))(root)
    jpegs = root / "VOCdevkit/VOC2012/JPEGImages"
    shutil.copy(sorted(jpegs.glob("*.jpg"))[0], jpegs / "2012_999999.jpg")


def _bsds(root: Path) -> None:
    from regionbench.synthetic import bsds500

    bsds500.write_tree(root, {"train": [11, 12, 13], "val": [21, 22]})


# Every test build, in one place: a name here, its config in configs/<name>.yaml.
BUILDS: dict[str, Build] = {
    "tiny": Build(profile=False),  # the whole recipe, as make release runs it
    "demo": Build(profile=False),  # make release's own build
    "coco-tiny": Build(),
    "bsds": Build(_bsds),
    "voc": Build(_voc),
    "cityscapes": Build(_generated("cityscapes", 9, 1, (160, 80))),
    "ade20k": Build(_generated("ade20k", 9, 1, (96, 48))),
    "ade20k-full": Build(_generated("ade20k_full", 9, 2, (80, 60))),
    "classmap": Build(_generated("classmap", 9, 2, (80, 60))),
    **{
        layout: Build(_generated(layout.replace("-", "_"), 6, 4, (64, 48)))
        for layout in ("camvid", "lip", "cocostuff", "labelme", "mapillary", "pascal-context")
    },
}


def config_text(name: str, raw: Path | None) -> str:
    """The build's config file with its raw tree's path in place of ``$RAW``."""
    text = (CONFIGS / f"{name}.yaml").read_text()
    if "$RAW" in text and raw is None:
        raise ValueError(f"tests/configs/{name}.yaml names $RAW but farm.BUILDS[{name!r}] writes no tree")
    return text.replace("$RAW", str(raw)) if raw is not None else text


def release_folder(project: Path, config: str) -> Path:
    """The release folder a build of ``config`` (over the workflow's defaults) writes."""
    settings = {**yaml.safe_load((project / "config/config.yaml").read_text()), **yaml.safe_load(config)}
    version = (settings.get("release") or {}).get("version", "1.0.0")
    return project / "releases" / settings["dataset"] / f"v{version}"


def make(name: str, folder: Path) -> None:
    """Build ``name`` in ``folder`` (a workflow copy in ``wf/``, its raw tree in ``raw/``): the
    release verified and publishable, what the build printed kept beside it."""
    from conftest import build, card_is_publishable, workflow_copy

    import regionbench

    spec = BUILDS[name]
    raw = None
    if spec.tree is not None:
        raw = folder / "raw"
        spec.tree(raw)
    project = workflow_copy(folder / "wf")
    config = config_text(name, raw)
    (project / "override.yaml").write_text(config)
    files = ([str(PROFILE)] if spec.profile else []) + [str(project / "override.yaml")]
    if spec.profile:
        shutil.copy(PROFILE, project / "profile.yaml")
        files[0] = str(project / "profile.yaml")
    done = build(project, "--configfile", *files)
    (folder / "output.json").write_text(json.dumps([done.stdout, done.stderr]))
    assert done.returncode == 0, f"farm build {name} failed:\n{done.stderr[-3000:]}"
    released = release_folder(project, config)
    assert regionbench.release.verify(released) == []
    card_is_publishable(released)


def built(name: str, folder: Path) -> Built:
    """What ``make`` left in ``folder``."""
    project = folder / "wf"
    config = (project / "override.yaml").read_text()
    stdout, stderr = json.loads((folder / "output.json").read_text())
    released = release_folder(project, config)
    raw = folder / "raw" if BUILDS[name].tree is not None else project / "resources/raw" / released.parent.name
    return Built(name, project, released, raw, stdout, stderr)

"""The release farm: every release the tests build, named once, built once a session.

Each build is a config under ``tests/configs/<name>.yaml`` and, where it reads a raw tree on
disk, the function below that writes that tree (the config's ``raw_dir: $RAW`` names it). The
session fixture ``release`` (conftest.py) builds a name the first time a test asks for it, on
whichever pytest-xdist worker asks first (the others wait on a file lock), and hands every test
the same folder: read-only (the session checks its files at the end), so a test that changes a
release copies it first.

Builds that check something other than the whole recipe start from ``configs/profile.yaml``
(``Build.profile``, the default): the classifiers off and the label audit sized to a tree of a
few images. ``tiny`` runs the whole recipe, on the tiny generated collection; ``demo`` is
``make release``'s own build.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from PIL import Image, ImageEnhance

CONFIGS = Path(__file__).resolve().parent / "configs"
PROFILE = CONFIGS / "profile.yaml"
BENCH = Path(__file__).resolve().parent / "data" / "bsds500-bench"  # the BSDS500 benchmark's test data


@dataclass(frozen=True)
class Build:
    """A farm build: the raw tree it reads (``tree(folder)`` writes it, or ``"module:function"``
    names a test module's writer; None: the workflow generates its own, ``synth`` in the config)
    and whether it starts from the test profile. What the writer returns (what it changed in the
    tree, say) is kept as JSON: ``Built.tree_info``."""

    tree: Callable[[Path], object] | str | None = None
    profile: bool = True
    # False: built as `make release` builds, with the workflow's own config alone (the file under
    # configs/ then only names the dataset the build makes).
    override: bool = True

    def write_tree(self, root: Path) -> object:
        """The tree written to ``root``; what its writer returned."""
        if isinstance(self.tree, str):  # a test module, imported by its name as pytest imports it
            import importlib

            module, function = self.tree.split(":")
            return getattr(importlib.import_module(module), function)(root)
        assert self.tree is not None
        return self.tree(root)


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
    tree_info: object = None

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


def _voc_train_only(root: Path) -> None:
    """VOC's tree of 6 images with one list, train.txt, naming every image."""
    _generated("voc", 6, 1, (64, 48))(root)
    lists = root / "VOCdevkit/VOC2012/ImageSets/Segmentation"
    names = sorted({n for p in lists.glob("*.txt") for n in p.read_text().split()})
    for path in lists.glob("*.txt"):
        path.unlink()
    (lists / "train.txt").write_text("\n".join(names) + "\n")


def _panoptic(flavour: str) -> Callable[[Path], None]:
    def write(root: Path) -> None:
        from regionbench.synthetic import panoptic

        list(panoptic.write_tree(root, 6, 2, flavour))

    return write


def _panoptic_val_only(root: Path) -> None:
    """COCO panoptic as panopticapi's own sample ships it: val2017 alone, no train side."""
    from regionbench.synthetic import panoptic

    list(panoptic.write_tree(root, 9, 3, "coco"))
    shutil.rmtree(root / "images" / "train2017")
    shutil.rmtree(root / "annotations" / "panoptic_train2017")
    (root / "annotations" / "panoptic_train2017.json").unlink()


def _free(categories: bool) -> Callable[[Path], None]:
    """The label-free COCO tree (conftest.one_category_tree); with its categories, the vocabulary
    ``regionbench vocabulary from-coco`` writes for it beside it (``vocabulary/``)."""

    def write(root: Path) -> None:
        from conftest import one_category_tree

        from regionbench import cli

        one_category_tree(root, categories=categories)
        if categories:
            assert cli.main(["vocabulary", "from-coco", str(root), "--out", str(root.parent / "vocabulary")]) == 0

    return write


def _bsds500(root: Path, images: dict[str, list[int]], humans: int = 3, seed: int = 0) -> None:
    """A generated BSDS500 tree (its ``BSDS500/`` folder) at ``root``."""
    from regionbench.synthetic import bsds500

    bsds500.write_tree(root.parent / "bsds500", images, humans=humans, seed=seed).rename(root)


def _bsds_humans(root: Path) -> None:
    _bsds500(root, {"train": [11, 12, 13], "val": [21, 22]}, humans=3, seed=4)


def _bsds_humans_as_coco(root: Path) -> None:
    """``_bsds_humans``' segmentations as COCO files: a file per human, a segment an RLE annotation."""
    import scipy.io
    from pycocotools import mask as mask_utils

    bsds = root.parent / "bsds"
    _bsds_humans(bsds)
    (root / "images").mkdir(parents=True)
    (root / "annotations").mkdir()
    files: dict[str, dict] = {}
    segment = [{"id": 1, "name": "segment", "supercategory": "segment"}]
    for path in sorted((bsds / "data/groundTruth").glob("*/*.mat")):
        image = bsds / "data/images" / path.parent.name / f"{path.stem}.jpg"
        (root / "images" / image.name).write_bytes(image.read_bytes())
        for k, entry in enumerate(scipy.io.loadmat(path)["groundTruth"][0], start=1):
            labels = entry["Segmentation"][0, 0]
            doc = files.setdefault(f"human-{k}", {"images": [], "annotations": [], "categories": segment})
            height, width = labels.shape
            doc["images"].append({"id": int(path.stem), "file_name": image.name, "height": height, "width": width})
            for value in np.unique(labels):
                rle = mask_utils.encode(np.asfortranarray((labels == value).astype(np.uint8)))
                rle["counts"] = rle["counts"].decode()
                doc["annotations"].append(
                    {
                        "id": len(doc["annotations"]) + 1,
                        "image_id": int(path.stem),
                        "category_id": 1,
                        "segmentation": rle,
                        "iscrowd": 0,
                    }
                )
    for who, doc in files.items():
        (root / "annotations" / f"{who}.json").write_text(json.dumps(doc))


def _bsds_crowd(root: Path) -> None:
    """Five humans on one test image, two on each of the five others."""
    import scipy.io

    _bsds500(root, {"test": [11, 12, 13, 14, 15, 16]}, humans=5, seed=7)
    for k, path in enumerate(sorted((root / "data/groundTruth/test").glob("*.mat"))):
        cell = scipy.io.loadmat(path)["groundTruth"]
        scipy.io.savemat(path, {"groundTruth": cell[:, : cell.shape[1] if k == 0 else 2]})


def _bsds_bench(root: Path) -> Path:
    """``images/test/<id>.jpg`` and ``groundTruth/test/<id>.mat``: the benchmark's five images and
    their humans, as BSDS500 distributes them (the reference methods see real photographs)."""
    for truth in sorted((BENCH / "groundTruth").glob("*.mat")):
        (root / "groundTruth" / "test").mkdir(parents=True, exist_ok=True)
        (root / "images" / "test").mkdir(parents=True, exist_ok=True)
        shutil.copy(truth, root / "groundTruth" / "test" / truth.name)
        shutil.copy(BENCH / "images" / f"{truth.stem}.jpg", root / "images" / "test" / f"{truth.stem}.jpg")
    return root


def _tiny_labels_only(root: Path) -> None:
    """The tiny SAIAPR collection without quirks, folder 00 without its masks."""
    from regionbench.synthetic.saiapr import write_collection

    list(write_collection(root, "tiny", seed=0, quirks=False, workers=1))
    shutil.rmtree(root / "00" / "segmentation_masks")


def near_copy(source: Path, target: Path, quality: int, brightness: float) -> None:
    """``source`` made brighter and saved again as a JPEG of another quality."""
    image = ImageEnhance.Brightness(Image.open(source).convert("RGB")).enhance(brightness)
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=quality)
    target.write_bytes(out.getvalue())


def copy_item(base: Path, name: str, new: str, split: str, quality: int, brightness: float) -> None:
    """Image ``name`` of a VOC tree again as ``new`` (its maps and XML too), listed in ``split``."""
    near_copy(base / f"JPEGImages/{name}.jpg", base / f"JPEGImages/{new}.jpg", quality, brightness)
    for kind in ("SegmentationClass", "SegmentationObject"):
        (base / f"{kind}/{new}.png").write_bytes((base / f"{kind}/{name}.png").read_bytes())
    xml = (base / f"Annotations/{name}.xml").read_text()
    (base / f"Annotations/{new}.xml").write_text(xml.replace(name, new))
    for listing in (split, "trainval"):
        path = base / f"ImageSets/Segmentation/{listing}.txt"
        path.write_text(path.read_text() + f"{new}\n")


def _voc_copies(root: Path) -> None:
    """VOC's tree of 30 images; three train images copied into train, one of them twice (a chain:
    a copy of a copy), and one copied into val, which the collection's own split then cuts."""
    _generated("voc", 30, 5, (160, 120))(root)
    base = root / "VOCdevkit/VOC2012"
    train = (base / "ImageSets/Segmentation/train.txt").read_text().split()
    copies = {train[0]: ["2099_000001", "2099_000002"], train[1]: ["2099_000003"], train[2]: ["2099_000004"]}
    for n, (name, news) in enumerate(copies.items()):
        for k, new in enumerate(news):
            copy_item(base, name if k == 0 else news[k - 1], new, "train", 60 + 10 * n, 1.0 + 0.04 * (k + 1))
    copy_item(base, train[3], "2099_000005", "val", 75, 0.93)


def _saco(root: Path) -> None:
    """SA-Co's files of the tiny three-annotator COCO collection (``synthetic.saco``)."""
    from regionbench.synthetic import saco

    list(saco.write_collection(root, "tiny", 0, 3))


def _bsds(root: Path) -> None:
    _bsds500(root, {"train": [11, 12, 13], "val": [21, 22]})


# Every test build, in one place: a name here, its config in configs/<name>.yaml.
BUILDS: dict[str, Build] = {
    "tiny": Build(profile=False),  # the whole recipe, as make release runs it
    "demo": Build(profile=False, override=False),  # make release's own build
    "tiny-audits-off": Build(),
    "tiny-labels-only": Build(_tiny_labels_only),
    "coco-tiny": Build(),
    "bsds": Build(_bsds),
    "bsds-bench": Build(_bsds_bench),
    "bsds-humans": Build(_bsds_humans),
    "bsds-humans-coco": Build(_bsds_humans_as_coco),
    "bsds-crowd": Build(_bsds_crowd),
    "free": Build(_free(categories=True)),
    "free-nocat": Build(_free(categories=False)),
    "free-words": Build(_free(categories=False)),
    "free-spdx": Build(_free(categories=False)),
    "panoptic-coco": Build(),
    "panoptic-cityscapes": Build(_panoptic("cityscapes")),
    "panoptic-ade20k": Build(_panoptic("ade20k")),
    "panoptic-coco-val": Build(_panoptic_val_only),
    "voc": Build(_voc),
    "coco-exports": Build("test_workflow_coco_exports:exported_tree"),
    "lvis": Build("test_workflow_lvis:lvis_tree"),
    "coco-distributed": Build("layouts.coco_distributed:coco_tree"),
    "saco": Build(_saco),
    "voc-copies": Build(_voc_copies),
    "voc-random": Build(_generated("voc", 12, 5, (96, 72))),
    "voc-train-only": Build(_voc_train_only),
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


def configfiles(name: str, project: Path, config: str | None = None) -> list[str]:
    """The ``--configfile`` arguments of build ``name`` in ``project``, its files written there:
    the test profile (where the build starts from it), then its own config (``config``: that
    text, its raw tree's path in place; default: the file as it is)."""
    spec = BUILDS[name]
    (project / "override.yaml").write_text(config if config is not None else config_text(name, None))
    files = [str(project / "override.yaml")] if spec.override else []
    if spec.profile:
        shutil.copy(PROFILE, project / "profile.yaml")
        files.insert(0, str(project / "profile.yaml"))
    return ["--configfile", *files] if files else []


def make(name: str, folder: Path) -> None:
    """Build ``name`` in ``folder`` (a workflow copy in ``wf/``, its raw tree in ``raw/``): the
    release verified and publishable, what the build printed kept beside it."""
    from conftest import build, card_is_publishable, workflow_copy

    import regionbench

    spec = BUILDS[name]
    raw = None
    if spec.tree is not None:
        raw = folder / "raw"
        (folder / "tree.json").write_text(json.dumps(spec.write_tree(raw), default=str))
    project = workflow_copy(folder / "wf")
    config = config_text(name, raw)
    done = build(project, *configfiles(name, project, config))
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
    if BUILDS[name].tree is None:
        return Built(name, project, released, project / "resources/raw" / released.parent.name, stdout, stderr)
    info = json.loads((folder / "tree.json").read_text())
    return Built(name, project, released, folder / "raw", stdout, stderr, info)

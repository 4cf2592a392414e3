"""A new raw layout is one file in regionbench/io/: the tiny label-map layout of
tests/layouts/labelmap.py, dropped beside the others, is found, ingested and built into a
release with no other change to the package, the workflow or the scripts."""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import PROJECT, build_command, workflow_copy, write_config
from PIL import Image

import regionbench.io
from regionbench.io import layouts
from regionbench.pipeline import ingest
from regionbench.pipeline.vocabulary import Registry

LAYOUT_FILE = Path(__file__).resolve().parents[1] / "layouts" / "labelmap.py"
LABELS = {1: "sky", 2: "grass", 3: "water"}
IMAGES = 12


def write_tree(root: Path) -> Path:
    """Label-map images: sky above grass, a pond of water in some."""
    (root / "images").mkdir(parents=True)
    (root / "maps").mkdir()
    (root / "labelmap.txt").write_text("".join(f"{v}\t{label}\n" for v, label in LABELS.items()))
    rng = np.random.default_rng(0)
    for k in range(1, IMAGES + 1):
        labels = np.ones((24, 32), np.uint8)
        labels[10 + k % 4 :] = 2
        if k % 3:
            labels[16:22, 4 + k : 12 + k] = 3
        pixels = rng.integers(0, 255, (24, 32, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(root / "images" / f"{k}.png")
        Image.fromarray(labels).save(root / "maps" / f"{k}.png")
    return root


@pytest.fixture
def with_labelmap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The layout file in a folder that regionbench.io searches too, as if copied into it."""
    extra = tmp_path / "io-extra"
    extra.mkdir()
    shutil.copy(LAYOUT_FILE, extra / "labelmap.py")
    monkeypatch.setattr(regionbench.io, "__path__", [*regionbench.io.__path__, str(extra)])
    layouts.registry.cache_clear()
    yield
    layouts.registry.cache_clear()
    sys.modules.pop("regionbench.io.labelmap", None)


def test_a_layout_file_is_found_detected_and_ingested(tmp_path: Path, with_labelmap: None) -> None:
    root = write_tree(tmp_path / "raw")
    assert set(layouts.registry()) == {"coco", "saiapr", "labelmap"}
    assert layouts.detect(root).name == "labelmap"
    words = Registry.read(Path(regionbench.pipeline.vocabulary.DEFAULT_DIR) / "label_ids.tsv").ids()
    shard = ingest.ingest_shard(root, "00", words)
    assert shard.images.num_rows == IMAGES
    assert (
        shard.regions.num_rows == shard.features.num_rows == IMAGES * 2 + sum(1 for k in range(1, IMAGES + 1) if k % 3)
    )
    assert set(shard.regions.column("label").to_pylist()) == set(LABELS.values())
    assert shard.relations.num_rows > 0 and shard.rejects.num_rows == 0
    assert ingest.merge_reports([shard.report])["regions"]["accepted"] == shard.regions.num_rows


@pytest.mark.workflow
def test_a_release_builds_from_a_layout_file_and_nothing_else(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    shutil.copytree(PROJECT / "src" / "regionbench", package / "regionbench")
    shutil.copy(LAYOUT_FILE, package / "regionbench" / "io" / "labelmap.py")
    project = workflow_copy(tmp_path / "wf")
    raw = write_tree(tmp_path / "raw")
    override = write_config(
        project, f"dataset: maps\nraw_dir: {raw}\nclassifiers: {{enabled: false}}\nrelease: {{images: paths}}\n"
    )
    env = {**subprocess.os.environ, "PYTHONPATH": str(package)}
    done = subprocess.run(
        build_command(project, "--configfile", str(override)), capture_output=True, text=True, cwd=project, env=env
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    folder = project / "releases" / "maps" / "v1.0.0"
    card = (folder / "README.md").read_text()
    assert "from label-map PNGs" in card and "label-map" in card
    verify = subprocess.run(
        [sys.executable, "-m", "regionbench", "verify", str(folder)], capture_output=True, text=True, env=env
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr

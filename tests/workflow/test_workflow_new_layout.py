"""A new raw layout is one file in regionbench/io/: the label-map layout of
tests/layouts/labelmap.py, copied into the package, builds a verified release with no other
change to the package, the workflow or the scripts, and exports it back as label maps."""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from conftest import PROJECT, build_command, workflow_copy, write_config
from layouts.tree import IMAGES, LABELS, LAYOUT_FILE, write_tree
from PIL import Image


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
    # Exporting is a method of the same file: the release written back as label maps, the same labels.
    out = tmp_path / "exported"
    export = subprocess.run(
        [sys.executable, "-m", "regionbench", "export", str(folder), str(out), "--format", "labelmap"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert export.returncode == 0, export.stdout + export.stderr
    assert export.stdout == f"{out}: {IMAGES} label maps of {len(LABELS)} labels\n"
    exported = dict(line.split("\t") for line in (out / "labelmap.txt").read_text().splitlines())
    for k in range(1, IMAGES + 1):
        raw_labels = np.vectorize(lambda v: LABELS.get(int(v), ""))(np.asarray(Image.open(raw / "maps" / f"{k}.png")))
        ours = np.vectorize(lambda v: exported.get(str(int(v)), ""))(np.asarray(Image.open(out / "maps" / f"{k}.png")))
        np.testing.assert_array_equal(ours, raw_labels)

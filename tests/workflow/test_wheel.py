"""The library outside the checkout: a wheel, installed without -e into an empty venv with the
client dependencies only, loads, verifies and scores a release."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pandas as pd
from conftest import PROJECT, TINY_RELEASE, run


def normalised(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def build_only() -> set[str]:
    """The distributions the build and dvc extras name (pyproject.toml), normalised."""
    extras = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=!~\[ ;]", spec, maxsplit=1)[0] for spec in extras["build"] + extras["dvc"]}
    return {normalised(name) for name in names} - {"regionbench"}


def test_the_client_install_holds_no_build_dependency(client_venv: Path) -> None:
    listed = run(client_venv / "bin" / "pip", "list", "--format", "json", cwd=client_venv)
    names = {normalised(p["name"]) for p in json.loads(listed.stdout)}
    heavy = build_only()
    assert {"snakemake", "mlcroissant", "huggingface-hub", "numba"} <= heavy  # the parse found the extras
    assert "regionbench" in names and not names & heavy, names & heavy


def test_the_installed_wheel_loads_verifies_and_scores(client_venv: Path, tiny_build: Path, tmp_path: Path) -> None:
    folder = tiny_build / TINY_RELEASE
    python, regionbench = client_venv / "bin" / "python", client_venv / "bin" / "regionbench"
    # Run from elsewhere, so nothing of the checkout is importable or found.
    done = run(regionbench, "verify", folder, cwd=tmp_path)
    assert "verified" in done.stdout
    code = (
        "import regionbench, sys; r = regionbench.load(sys.argv[1]); "
        "assert regionbench.__file__.startswith(sys.prefix), regionbench.__file__; "
        "print(len(r.regions), r.verify(), r.mask(int(r.regions.image_id[0]), int(r.regions.region_id[0])).shape)"
    )
    loaded = run(python, "-c", code, folder, cwd=tmp_path)
    regions = pd.read_parquet(folder / "data" / "regions.parquet")
    assert loaded.stdout.startswith(f"{len(regions)} [] (")
    subsets = pd.read_parquet(folder / "data" / "subsets.parquet")
    test = subsets[(subsets.subset == "H") & (subsets.split == "test")]
    test[["image_id", "annotator", "region_id", "label"]].to_csv(tmp_path / "perfect.csv", index=False)
    scored = run(
        regionbench, "evaluate", "--release", folder, "--predictions", "perfect.csv", "--task", "region",
        "--out", "report.json", cwd=tmp_path,
    )  # fmt: skip
    report = json.loads((tmp_path / "report.json").read_text())
    assert "e_hard" in scored.stdout and report["measures"]["any"]["e_hard"] == 1.0

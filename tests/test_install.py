"""The pinned environment `make` installs: its heavy packages carry their bytecode, for this
machine, CI and many Docker images set ``PYTHONDONTWRITEBYTECODE=1``, and without it every
process (each build job, each command) compiles them again."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import PROJECT

HEAVY = ("snakemake.cli", "pandas", "pyarrow", "sklearn.ensemble", "scipy.ndimage", "skimage.segmentation")

# Run in a fresh process: the modules those imports load, under site-packages, whose bytecode
# file is missing.
UNCOMPILED = """
import importlib, importlib.util, os, sys, sysconfig
for name in sys.argv[1:]:
    importlib.import_module(name)
site = sysconfig.get_path("purelib")
for module in list(sys.modules.values()):
    path = getattr(module, "__file__", None) or ""
    if path.startswith(site) and path.endswith(".py") and not os.path.isfile(importlib.util.cache_from_source(path)):
        print(path)
"""


@pytest.mark.skipif(
    not sys.prefix.startswith(str(PROJECT / ".venv")), reason="checks the .venv that make installs; run under it"
)
def test_the_venv_s_heavy_packages_carry_their_bytecode() -> None:
    done = subprocess.run([sys.executable, "-c", UNCOMPILED, *HEAVY], capture_output=True, text=True, check=True)
    missing = sorted(done.stdout.split())
    assert len(missing) == 0, f"{len(missing)} modules without bytecode, e.g. {missing[:3]}: run make again"

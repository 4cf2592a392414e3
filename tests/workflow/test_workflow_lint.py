"""`snakemake --lint` finds nothing but its advice to use conda or containers.

The workflow runs in the project's pinned virtual environment (docs/layout.md), so that one piece of
advice does not apply; any other lint fails this test.
"""

import re
import subprocess
import sys

from conftest import PROJECT


def test_snakemake_lint_is_clean() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--lint", "--cores", "1"], cwd=PROJECT, capture_output=True, text=True
    )
    output = done.stdout + done.stderr
    lints = re.findall(r"^\s+\* (.+)$", output, flags=re.MULTILINE)
    assert lints, output[-2000:]  # lint ran and reported at least the conda advice
    others = [lint for lint in lints if not lint.startswith("Specify a conda environment or container")]
    assert others == [], output

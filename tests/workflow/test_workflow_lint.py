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


def test_every_rule_that_takes_every_core_has_its_threads_in_the_slurm_profile() -> None:
    """A rule whose threads a local run sets to every core (``local_cores()``) is named in the
    SLURM profile's ``set-threads``: on a cluster the submitting side counts no local cores, the
    job its node's, and sbatch then refuses the step ("More processors requested than
    permitted"); the profile makes both sides agree."""
    import yaml

    taking = set()
    for path in sorted((PROJECT / "rules").glob("*.smk")):
        taking |= set(
            re.findall(r"^rule (\w+):(?:(?!^rule ).)*?^\s+threads: local_cores\(\)", path.read_text(), re.M | re.S)
        )
    profile = yaml.safe_load((PROJECT / "config" / "profiles" / "slurm" / "config.yaml").read_text())
    assert taking >= {"assemble", "baselines", "release"}  # the reading finds them
    assert taking <= set(profile["set-threads"]), sorted(taking - set(profile["set-threads"]))

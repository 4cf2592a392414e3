"""``regionbench challenge``: a release made a hosted benchmark in one step.

``host`` writes, under one folder: ``public/`` (the public release, ``public``), checked by the
leak audit (``regionbench.audit.leaks``) and sealed with its finding; ``codabench/`` and
``codabench.zip`` (``codabench``), whose starting kit holds the predictions of the release
kind's reference method; and ``challenge.json``, which records the private release's digest,
the public release's and the bundle's.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from regionbench.challenge import codabench, public
from regionbench.core import tables
from regionbench.core.errors import InputError
from regionbench.release.loader import Release

SCORED_AT = "the benchmark's Codabench competition (codabench.zip)"


def _method(task: str) -> str:
    """The reference method whose predictions make ``task``'s starting kit: the first
    segmentation method for the segments and boundaries tasks (one run serves both), else the
    first labels method (the pixel classifier: its classes, its things' components)."""
    from regionbench import baselines

    kind = "segmentation" if task in baselines.KINDS["segmentation"] else "labels"
    return next(name for name, module in sorted(baselines.registry().items()) if kind == module.KIND)


def starting_kits(
    data: Release,
    names: Sequence[str],
    work: Path,
    done: Path | None,
    images: Path | None,
    progress: Callable[[str], None],
) -> dict[str, codabench.Kit]:
    """Each task's starting kit: its reference method's predictions (those under ``done``, a
    ``regionbench baselines --out`` folder or the build's, where the method ran there; else the
    method run here into ``work``), scored as the scoring program scores a submission."""
    from regionbench import baselines
    from regionbench.scoring import tasks

    kits: dict[str, codabench.Kit] = {}
    ran: set[str] = set()
    for task in names:
        method = _method(task)
        home = (done or work) / method
        found = baselines.predictions_of(home, task)
        if not found.exists():  # not run there: run here
            home = work / method
            found = baselines.predictions_of(home, task)
        if not found.exists() and method not in ran:
            progress(f"starting kit: running {method} on the hidden side's images")
            baselines.run(data, method, work, images, None, progress, things_unsaid=task == "instances", score=False)
            ran.add(method)
        if not found.exists():
            raise InputError(
                f"--task {task}: {method} wrote no {task} predictions for this release; leave the task out"
            )
        report = tasks.evaluate(data, found, task, split="source")
        kits[task] = codabench.Kit(method, found, report)
    return kits


def host(
    release: Path,
    out: Path,
    hidden: str | None = None,
    names: Sequence[str] | None = None,
    done: Path | None = None,
    images: Path | None = None,
    docker_image: str | None = None,
    end: str | None = None,
    max_mib: int = codabench.MAX_MIB,
    progress: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """The hosted benchmark of the release folder ``release`` written under ``out`` (module
    docstring); ``hidden``: the split to hide (default: its evaluation split, the one
    ``evaluate`` scores); ``names``: the tasks (default ``codabench.tasks_of``); ``done``: a
    folder of ``regionbench baselines`` whose predictions make the starting kit; ``images``:
    the raw tree, where the release names its image files. Returns ``challenge.json``'s record."""
    from regionbench.audit import leaks
    from regionbench.release.loader import load
    from regionbench.release.manifest import sha256_file
    from regionbench.scoring.tasks._masks import recorded_split

    data = load(release)
    split = public.hidden_split(data, hidden)
    if split != recorded_split(data):
        raise InputError(
            f"--hidden {split}: regionbench evaluate scores this release's evaluation split, "
            f"{recorded_split(data)}; hide that one"
        )
    chosen = list(names or codabench.tasks_of(data))
    if unknown := codabench.unknown_tasks(chosen):
        raise InputError(f"--task {unknown[0]}: not a task a bundle hosts; choose among {', '.join(codabench.ENTRIES)}")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out, prefix=".work-") as scratch:
        kits = starting_kits(data, chosen, Path(scratch), done, images, progress)
        progress(f"public release: the {split} side's truth left out")
        folder = out / "public"
        public.write_public(data, folder, split, SCORED_AT)
        if found := leaks.audit(folder, data):
            shutil.rmtree(folder)
            raise InputError(f"the public release leaks the hidden truth: {found[0]} (and {len(found) - 1} more)")
        manifest = public.write_public(data, folder, split, SCORED_AT, leaks=0)  # its card states the finding
        if found := leaks.audit(folder, data):
            raise InputError(f"the public release leaks the hidden truth: {found[0]}")
        progress("leak audit: no value of the hidden truth in the public release")
        bundle = codabench.write_bundle(data, manifest, split, kits, out, docker_image, end, max_mib)
    record = {
        "hidden": split,
        "tasks": chosen,
        "private": {"folder": str(data.folder.name), "dataset": data.dataset, "version": data.version,
                    "digest": data.manifest["digest"]},
        "public": {"dataset": manifest["dataset"], "version": manifest["version"], "digest": manifest["digest"]},
        "codabench_zip_sha256": sha256_file(bundle),
        "starting_kit": {task: {"method": kit.method, "scores": codabench.scorer.scores(kit.report, codabench.columns(task, kit.report))}
                         for task, kit in kits.items()},
    }  # fmt: skip
    tables.write_json(out / "challenge.json", record)
    return record

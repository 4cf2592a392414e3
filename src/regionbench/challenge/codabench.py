"""The Codabench bundle of a hosted benchmark (Codabench's competition format, version 2).

``write_bundle`` writes ``codabench/`` and ``codabench.zip`` holding the same files:

- ``competition.yaml``: the title, logo, pages and terms; one task per scored task, each naming
  the one scoring program and its own reference data; one phase per hidden side, from the
  release's date, holding every task; the starting kit as the solution of every task; one
  leaderboard whose columns are each task's headline measures with their 95 % interval;
- ``scoring_program.zip``: ``score.py`` and ``metadata.yaml`` (the command the compute worker
  runs), this regionbench's own package beside them (the program imports it first: the scores
  are this version's), and ``requirements.txt`` with ``Dockerfile``, the image it runs in, its
  packages pinned to this installation's;
- ``reference_data_<task>.zip``: the private release and ``challenge.json`` (``scorer``);
- ``starting_kit.zip``: a submission a participant can send as it is (the reference method's
  predictions, each task's entry at its top), its expected scores and a README;
- ``pages/*.md`` and ``logo.png``.

Every zip is written in name order with a fixed time stamp: a bundle rebuilt from the same
release has the same bytes.
"""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from regionbench.challenge import ENTRIES, MAX_MIB, scorer

if TYPE_CHECKING:
    from regionbench.release.loader import Release

DOCKER_IMAGE = "regionbench-scoring:{version}"  # built from the scoring program's Dockerfile
STAMP = (1980, 1, 1, 0, 0, 0)  # every zip member's time: no build's clock in the bundle
CLIENT = ("pyarrow", "pandas", "numpy", "shapely", "pycocotools", "faster-coco-eval", "ijson", "Pillow", "jsonschema",
          "PyYAML")  # fmt: skip

SCORE_PY = '''"""Codabench scoring program of a regionbench benchmark: Codabench's compute worker runs it
as `python3 /app/program/score.py`, the reference data in /app/input/ref, the submission in
/app/input/res, the scores written to /app/output (regionbench.challenge.scorer)."""

import sys
from pathlib import Path

program = Path(__file__).resolve().parent
sys.path.insert(0, str(program))  # the regionbench that made the bundle, beside this file
from regionbench.challenge.scorer import main  # noqa: E402

sys.exit(main(program.parent))
'''

DOCKERFILE = """# The image the scoring program runs in: Python 3.11 and regionbench's client packages, pinned.
# Build and push it, then name it in competition.yaml's docker_image:
#   docker build -t {image} . && docker push {image}
FROM python:3.11-slim
COPY requirements.txt /tmp/requirements.txt
RUN pip install --no-cache-dir -r /tmp/requirements.txt
"""


@dataclass(frozen=True)
class Kit:
    """A task's starting kit: the reference method's predictions (a file or folder) and the
    report ``evaluate`` gave them."""

    method: str
    predictions: Path
    report: Mapping[str, Any]


def requirements() -> str:
    """The scoring image's packages: regionbench's client dependencies at this installation's versions."""
    from importlib.metadata import version

    return "".join(f"{name}=={version(name)}\n" for name in CLIENT)


def _zip(members: Mapping[str, Path | bytes], target: Path) -> None:
    """``target`` a zip of ``members`` (name in the zip -> a file, a folder or bytes), in name
    order with ``STAMP``: the same members give the same bytes."""
    files: dict[str, Path | bytes] = {}
    for name, source in members.items():
        if isinstance(source, Path) and source.is_dir():
            for path in source.rglob("*"):
                if path.is_file() and "__pycache__" not in path.parts:
                    files[f"{name}/{path.relative_to(source).as_posix()}"] = path
        else:
            files[name] = source
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, STAMP)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            source = files[name]
            out.writestr(info, source if isinstance(source, bytes) else source.read_bytes())


def logo() -> bytes:
    """The competition's logo: a PNG drawn here (regions of four colours), the same bytes every time."""
    from PIL import Image, ImageDraw

    picture = Image.new("RGB", (256, 256), (245, 245, 240))
    draw = ImageDraw.Draw(picture)
    draw.polygon([(20, 200), (90, 40), (150, 150), (110, 236)], fill=(70, 130, 180))
    draw.ellipse((120, 30, 236, 146), fill=(220, 120, 60))
    draw.rectangle((140, 160, 236, 236), fill=(90, 160, 90))
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()


def columns(task: str, report: Mapping[str, Any]) -> dict[str, str]:
    """A task's leaderboard columns: each headline measure of ``report`` -> its key."""
    return {measure: scorer.column_key(task, measure) for measure in scorer.headline(report)}


def _leaderboard(kits: Mapping[str, Kit]) -> dict[str, Any]:
    from regionbench.scoring.compare import LOWER_IS_BETTER

    listed = []
    for task, kit in kits.items():
        for measure, key in columns(task, kit.report).items():
            order = "asc" if measure.split(".")[0] in LOWER_IS_BETTER else "desc"
            listed.append({"title": f"{task} {measure}", "key": key, "sorting": order})
            if measure in (kit.report.get("intervals") or {}):
                listed += [
                    {"title": f"{task} {measure} 95% low", "key": f"{key}_low", "sorting": order},
                    {"title": f"{task} {measure} 95% high", "key": f"{key}_high", "sorting": order},
                ]
    return {
        "title": "Results",
        "key": "main",
        "columns": [{**column, "index": k} for k, column in enumerate(listed)],
    }


def _pages(data: Release, public: Mapping[str, Any], split: str, kits: Mapping[str, Kit]) -> dict[str, str]:
    """The competition's pages (Markdown), by file name."""
    private = data.manifest
    name = f"{private['dataset']} v{private['version']}"
    entries = "\n".join(
        f"- `{ENTRIES[task]}`: the `{task}` task's predictions, as `regionbench evaluate --task {task}` reads them"
        for task in kits
    )
    measures = "\n".join(
        f"- `{task}`: " + ", ".join(f"{m}" for m in columns(task, kit.report)) + f" (the reference method, {kit.method}: "
        + ", ".join(f"{m} {v:.4f}" for m, v in scorer.scores(kit.report, columns(task, kit.report)).items() if not m.endswith(("_low", "_high")))
        + ")"
        for task, kit in kits.items()
    )  # fmt: skip
    return {
        "overview.md": (
            f"# {name}: the {split} side hidden\n\n"
            f"A region-annotated image benchmark released by regionbench. The truth of its `{split}` split is\n"
            "held by this server alone: participants get the public release (every other record, and the hidden\n"
            "side's images without their regions) and send predictions for the hidden images; the scoring program\n"
            f"scores them with `regionbench evaluate`, exactly as the command scores them on the private release.\n\n"
            f"Tasks: {', '.join(kits)}. A submission is a zip with at its top:\n\n{entries}\n\n"
            "The starting kit is such a zip, the reference method's predictions, with the scores it gets.\n"
        ),
        "evaluation.md": (
            "# Evaluation\n\n"
            "Each task's scoring program runs `regionbench evaluate` on the private release, with the task's own\n"
            "settings, and reports the task's headline measures with their 95 % interval (a percentile bootstrap\n"
            "over the scored images: 1,000 resamples, seeded, the same for every submission, so two submissions'\n"
            "intervals are paired):\n\n"
            f"{measures}\n\n"
            f"Every score names the private release it was computed on: {name}, digest\n"
            f"`{private['digest']}`.\n\n"
            "A submission of the wrong shape, with predictions of unknown images or unreadable files, or over the\n"
            "size limit fails with one line in the scoring log saying what to mend; it gets no score.\n"
        ),
        "data.md": (
            "# Data\n\n"
            f"The public release `{public['dataset']}` v{public['version']} (digest `{public['digest']}`) holds the\n"
            f"train side whole and the {split} side's images ({public['hidden']['images']} of them: ids, files, sizes)\n"
            "without their truth. Check it with `regionbench verify`; load it with `regionbench.load`.\n"
        ),
        "terms.md": (
            "# Terms\n\n"
            f"The release's licence: {private['license']}; its images keep their source's terms. Submit only\n"
            "predictions your method made; the hidden truth is not to be sought or reconstructed.\n"
        ),
    }


def _challenge(data: Release, task: str, split: str, kit: Kit, max_bytes: int) -> dict[str, Any]:
    from regionbench import __version__

    private = data.manifest
    return {
        "task": task,
        "split": split,
        "settings": {"split": "source"},
        "entry": ENTRIES[task],
        "max_bytes": max_bytes,
        "columns": columns(task, kit.report),
        "private": {"dataset": private["dataset"], "version": private["version"], "digest": private["digest"]},
        "regionbench": __version__,
    }


def competition(
    data: Release, public: Mapping[str, Any], split: str, kits: Mapping[str, Kit], docker_image: str, end: str | None
) -> dict[str, Any]:
    """competition.yaml's content (module docstring)."""
    private = data.manifest
    tasks = list(kits)
    phase: dict[str, Any] = {
        "index": 0,
        "name": split,
        "description": f"Predictions for the {split} side's images, scored against its hidden truth.",
        "start": private["date"],
        "tasks": list(range(len(tasks))),
    }
    if end is not None:
        phase["end"] = end
    return {
        "version": 2,
        "title": f"{private['dataset']} v{private['version']}: {split} hidden",
        "description": f"regionbench benchmark {private['dataset']} v{private['version']}, scored on its hidden {split} side.",
        "image": "logo.png",
        "registration_auto_approve": True,
        "docker_image": docker_image,
        "terms": "pages/terms.md",
        "pages": [
            {"title": title, "file": f"pages/{file}"}
            for title, file in (
                ("Overview", "overview.md"),
                ("Evaluation", "evaluation.md"),
                ("Data", "data.md"),
                ("Terms", "terms.md"),
            )
        ],
        "tasks": [
            {
                "index": k,
                "name": task,
                "description": f"regionbench evaluate --task {task} on the {split} side",
                "scoring_program": "scoring_program.zip",
                "reference_data": f"reference_data_{task}.zip",
            }
            for k, task in enumerate(tasks)
        ],
        "solutions": [
            {"index": 0, "name": "starting kit", "path": "starting_kit.zip", "tasks": list(range(len(tasks)))}
        ],
        "phases": [phase],
        "leaderboards": [_leaderboard(kits)],
    }


def _starting_kit(kits: Mapping[str, Kit]) -> dict[str, Path | bytes]:
    expected = {task: scorer.scores(kit.report, columns(task, kit.report)) for task, kit in kits.items()}
    readme = (
        "# Starting kit\n\n"
        "This zip is a submission: send it as it is. It holds, at its top, each task's predictions by the\n"
        "benchmark's reference method, and `expected_scores.json`, the scores they get.\n\n"
        + "".join(
            f"- `{ENTRIES[task]}`: {kit.method}'s predictions for the `{task}` task\n" for task, kit in kits.items()
        )
    )
    members: dict[str, Path | bytes] = {ENTRIES[task]: kit.predictions for task, kit in kits.items()}
    members["README.md"] = readme.encode()
    members["expected_scores.json"] = (json.dumps(expected, sort_keys=True, indent=1) + "\n").encode()
    return members


def write_bundle(
    data: Release,
    public: Mapping[str, Any],
    split: str,
    kits: Mapping[str, Kit],
    out: Path,
    docker_image: str | None = None,
    end: str | None = None,
    max_mib: int = MAX_MIB,
) -> Path:
    """``out/codabench/`` and ``out/codabench.zip`` (module docstring) for the private release
    ``data`` with ``split`` hidden, ``public`` the public release's manifest, ``kits`` each
    task's starting kit. Returns the zip's path."""
    from regionbench import __version__

    folder = out / "codabench"
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "pages").mkdir(parents=True)
    image = docker_image or DOCKER_IMAGE.format(version=__version__.split("+")[0])
    document = competition(data, public, split, kits, image, end)
    (folder / "competition.yaml").write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True))
    (folder / "logo.png").write_bytes(logo())
    for file, text in _pages(data, public, split, kits).items():
        (folder / "pages" / file).write_text(text, encoding="utf-8")
    import regionbench

    package = Path(regionbench.__file__).resolve().parent  # this regionbench, travelling with its program
    _zip(
        {
            "score.py": SCORE_PY.encode(),
            "metadata.yaml": b"command: python3 /app/program/score.py\n",
            "requirements.txt": requirements().encode(),
            "Dockerfile": DOCKERFILE.format(image=image).encode(),
            "regionbench": package,
        },
        folder / "scoring_program.zip",
    )
    for task, kit in kits.items():
        challenge = _challenge(data, task, split, kit, max_mib * 2**20)
        _zip(
            {
                "release": data.folder,
                scorer.CHALLENGE: (json.dumps(challenge, sort_keys=True, indent=1) + "\n").encode(),
            },
            folder / f"reference_data_{task}.zip",
        )
    _zip(_starting_kit(kits), folder / "starting_kit.zip")
    bundle = out / "codabench.zip"
    _zip({p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*")) if p.is_file()}, bundle)
    return bundle


def tasks_of(data: Release) -> list[str]:
    """The tasks a release's benchmark is hosted with by default: those of its reference
    methods' kind (BSDS500: segments and boundaries; a benchmark of label maps: semantic), and
    for a COCO-family release of instances, instances."""
    from regionbench import baselines
    from regionbench.io import layouts

    known = layouts.registry().get(str(data.manifest.get("layout")))
    kind = known.about.baselines if known is not None else None
    if kind is not None and kind in baselines.KINDS:
        return list(baselines.KINDS[kind])
    return ["instances"]


def unknown_tasks(names: Sequence[str]) -> list[str]:
    """The names of ``names`` a bundle cannot host (no submission entry for them)."""
    return [name for name in names if name not in ENTRIES]

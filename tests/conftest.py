"""Shared fixtures: generated collections, made once per test session."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import farm
import numpy as np
import pytest
from cpu_log import pytest_runtest_protocol  # noqa: F401  (REGIONBENCH_CPU_LOG: each test's CPU)
from filelock import FileLock
from hypothesis import settings as hypothesis_settings

import regionbench
from regionbench.pipeline.ingest import ingest_shard
from regionbench.release import file_digests
from regionbench.synthetic import plans
from regionbench.synthetic.saiapr import write_collection

PROJECT = Path(__file__).resolve().parents[1]

# Property tests draw the same examples on every run and machine (a seed per test): a failure in
# CI is the same failure here, run again. HYPOTHESIS_PROFILE=explore draws new ones each run.
hypothesis_settings.register_profile("fixed", derandomize=True)
hypothesis_settings.register_profile("explore", derandomize=False)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fixed"))

WORKFLOW_TESTS = Path(__file__).resolve().parent / "workflow"
# The machinery around a build rather than what it builds: DVC flows and fresh clones of tags,
# stop signals, a machine at fault, the wheel outside the checkout, scoring as jobs. Their own
# lane (make test-machinery), which CI runs beside make test.
MACHINERY = ("test_release_versions.py", "test_interrupt.py", "test_machine_faults.py", "test_wheel.py",
             "test_scoring_jobs.py", "test_challenge_real.py")  # fmt: skip


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The lane is the folder: every test under tests/workflow/ (a Snakemake build, or a test of
    what one built) is marked ``workflow``, which ``make test-units`` leaves out; the
    ``MACHINERY`` files' tests ``machinery``, which ``make test`` leaves to its own lane."""
    for item in items:
        if item.path.is_relative_to(WORKFLOW_TESTS):
            item.add_marker(pytest.mark.workflow)
            if item.path.name in MACHINERY:
                item.add_marker(pytest.mark.machinery)


WORKFLOW_FILES = ("Snakefile", "rules", "scripts", "config", "schemas")  # the workflow without its library


def workflow_copy(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        src = PROJECT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dest / name)
    return dest


def build_command(project: Path, *args: str, cores: int | None = 2) -> list[str]:
    """``regionbench build`` of ``project``; ``cores=None`` leaves the parallelism to the profile."""
    cmd = [sys.executable, "-m", "regionbench", "build", "--project-dir", str(project), *args]
    return [*cmd, "--cores", str(cores)] if cores else cmd


def build(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(build_command(project, *args), capture_output=True, text=True, cwd=project)


def on_a_terminal(command: list[str], when: bytes | None = None, keys: bytes = b"") -> tuple[int, bytes, int | None]:
    """``command`` run on a pseudo-terminal as a person runs it (``CI`` unset: CI asks for plain
    lines even on a terminal), typing ``keys`` once its output holds ``when``: its exit code,
    everything it wrote, and where in that the keys were typed (None: never)."""
    import pty
    import select
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: the command, its output on the terminal
        os.execve(command[0], command, {k: v for k, v in os.environ.items() if k != "CI"})
    out, sent, deadline = b"", None, time.monotonic() + 600
    while time.monotonic() < deadline:
        if select.select([fd], [], [], 0.1)[0]:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        if when is not None and sent is None and when in out:
            os.write(fd, keys)
            sent = len(out)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out, sent


def regionbench_cli(*args: str, cwd: Path | None = None, merged: bool = False) -> subprocess.CompletedProcess:
    """``regionbench ARGS`` run in this process, through ``cli.main`` (in ``cwd`` if given): its
    exit status, standard output and error, as ``subprocess.run`` would give them without the
    second of imports a fresh interpreter pays (``merged``: the error stream in the output, in
    the order written, as a terminal shows them). The tests about the process itself (a terminal,
    a signal, an installed wheel) spawn one instead."""
    import contextlib
    import io

    from regionbench import cli

    out = io.StringIO()
    err = out if merged else io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), contextlib.chdir(cwd or Path.cwd()):
        try:
            code = cli.main(list(args))
        except SystemExit as exc:  # argparse's usage errors and --help
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    return subprocess.CompletedProcess(["regionbench", *args], code, out.getvalue(), "" if merged else err.getvalue())


def evaluate_instances(folder: Path, predictions: str, *options: str) -> subprocess.CompletedProcess:
    """``regionbench evaluate --task instances`` of ``predictions`` against the release ``folder``
    with ``options``, in this process."""
    return regionbench_cli(
        "evaluate", "--release", str(folder), "--predictions", predictions, "--task", "instances", *options
    )


def write_config(project: Path, text: str) -> Path:
    path = project / "override.yaml"
    path.write_text(text)
    return path


WHOLE = 1000  # COCO images per shard that puts every image of a small test tree in shard 00
TINY_RELEASE = "releases/tiny/v1.0.0"
TINY = (farm.CONFIGS / "tiny.yaml").read_text()


def build_output(project: Path) -> tuple[str, str]:
    """The standard output and error of the farm build that built ``project``."""
    stdout, stderr = json.loads((project.parent / "output.json").read_text())
    return stdout, stderr


def shared(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], object]) -> Path:
    """The folder ``name`` that ``make`` fills, once per test run: under pytest-xdist the first
    worker to ask makes it and the others wait for it, so a shared build is built once."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        folder = factory.mktemp(name)
        make(folder)
        return folder
    root = factory.getbasetemp().parent  # the run's folder, above every worker's own
    folder, done = root / name, root / f"{name}.done"
    with FileLock(root / f"{name}.lock"):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # left by a worker whose make failed
            folder.mkdir()
            make(folder)
            done.touch()
    return folder


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Releases fetched and verified by the tests are remembered in the session's own cache,
    never in the user's (subprocesses inherit it)."""
    os.environ["REGIONBENCH_CACHE"] = str(tmp_path_factory.mktemp("regionbench-cache"))


HUB_LICENCES = set((Path(__file__).parent / "data/hub/licences.txt").read_text().split())


def card_is_publishable(folder: Path) -> None:
    """The release's card as the Hugging Face Hub reads it and its Croissant as mlcroissant
    does: the card parses with ``huggingface_hub`` (metadata errors raised), names a licence
    the Hub lists (``other`` with a ``license_name``), its configs' files are in the release;
    ``croissant.json`` has no error and no warning. With ``REGIONBENCH_HUB_ONLINE=1`` the Hub's
    own validation judges the card too (it needs the network)."""
    import mlcroissant as mlc
    from huggingface_hub import DatasetCard

    card = DatasetCard.load(folder / "README.md", ignore_metadata_errors=False)
    data = card.data.to_dict()
    assert data["license"] in HUB_LICENCES, data["license"]
    if data["license"] == "other":
        assert re.fullmatch(r"[a-z0-9][a-z0-9.-]*", data.get("license_name") or ""), data
    for config in data.get("configs", []):
        for split in config["data_files"]:
            assert (folder / split["path"]).is_file(), split
    if os.environ.get("REGIONBENCH_HUB_ONLINE") == "1":
        card.validate(repo_type="dataset")
    issues = mlc.Dataset(jsonld=str(folder / "croissant.json")).metadata.ctx.issues
    assert issues.errors == set() and issues.warnings == set(), issues.report()


@pytest.fixture(scope="session")
def release(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], farm.Built]]:
    """``release(name)``: the farm's build ``name`` (tests/farm.py), built once a session across
    every worker. Read-only: a test that changes a release copies it first; the session fails at
    its end if any farm release it handed out has changed."""
    made: dict[str, farm.Built] = {}
    sealed: dict[str, dict[str, str]] = {}

    def get(name: str) -> farm.Built:
        if name not in made:
            folder = shared(tmp_path_factory, f"farm-{name}", lambda folder: farm.make(name, folder))
            made[name] = farm.built(name, folder)
            sealed[name] = file_digests(made[name].folder)
        return made[name]

    yield get
    changed = sorted(name for name, built in made.items() if file_digests(built.folder) != sealed[name])
    assert not changed, f"tests changed the farm's releases {changed}: copy a release before changing it"


@pytest.fixture(scope="session")
def tiny_build(release: Callable[[str], farm.Built]) -> Path:
    """A project folder with the tiny release built end to end (shared: do not modify)."""
    return release("tiny").project


COCO_TINY = (farm.CONFIGS / "coco-tiny.yaml").read_text()
COCO_RELEASE = "releases/coco-tiny/v1.0.0"


@pytest.fixture(scope="session")
def coco_build(release: Callable[[str], farm.Built]) -> Path:
    """A project folder with the generated three-annotator COCO release built end to end
    (shared: do not modify)."""
    return release("coco-tiny").project


@pytest.fixture()
def drop_in_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path], None]]:
    """``drop(file)`` puts a layout file in a folder ``regionbench.io`` searches too, as if copied
    into the package. Undone after the test: the search path, the registry's cache and the
    imported module, which another test dropping a file of the same name would otherwise get."""
    import regionbench.io
    from regionbench.io import layouts

    extra = tmp_path / "io-extra"
    extra.mkdir()
    modules: list[str] = []

    def drop(path: Path) -> None:
        shutil.copy(path, extra / path.name)
        modules.append(f"regionbench.io.{path.stem}")
        sys.modules.pop(modules[-1], None)
        layouts.registry.cache_clear()

    monkeypatch.setattr(regionbench.io, "__path__", [*regionbench.io.__path__, str(extra)])
    yield drop
    layouts.registry.cache_clear()
    for name in modules:
        sys.modules.pop(name, None)


@pytest.fixture()
def tiny_release(tiny_build: Path, tmp_path: Path) -> Path:
    """A private copy of the tiny release that a test may damage."""
    return Path(shutil.copytree(tiny_build / TINY_RELEASE, tmp_path / "v1.0.0"))


@pytest.fixture(scope="session")
def coco_pair(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated two-annotator COCO tree (tiny profile, disagreement 0.2); do not modify."""
    from regionbench.synthetic.coco import write_collection as write_coco

    def make(folder: Path) -> None:
        for _ in write_coco(folder / "raw", "tiny", annotators=2, disagreement=0.2, workers=1):
            pass

    return shared(tmp_path_factory, "coco-pair", make) / "raw"


def one_category_tree(root: Path, disagreement: float = 0.3, categories: bool = True) -> Path:
    """A generated three-annotator COCO tree (tiny profile) whose every segment is under the one
    category ``segment``: a label-free collection, as the Berkeley segmentation benchmarks.
    Without ``categories`` the files have no categories and the annotations no category_id."""
    import json

    from regionbench.synthetic.coco import write_collection as write_coco

    for _ in write_coco(root, "tiny", annotators=3, disagreement=disagreement, workers=1):
        pass
    for path in (root / "annotations").glob("*.json"):
        data = json.loads(path.read_text())
        data["categories"] = [{"id": 1, "name": "segment", "supercategory": ""}]
        for ann in data["annotations"]:
            ann["category_id"] = 1
        if not categories:
            del data["categories"]
            for ann in data["annotations"]:
                del ann["category_id"]
        path.write_text(json.dumps(data))
    return root


def generate(out: Path, profile: str, quirks: bool, seed: int = 0) -> Path:
    """The SAIAPR collection of ``profile`` written to ``out``."""
    for _ in write_collection(out, profile, seed=seed, quirks=quirks, workers=2):
        pass
    return out


@pytest.fixture(scope="session")
def demo_quirks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo profile with every real-file quirk."""
    return shared(tmp_path_factory, "demo", lambda folder: generate(folder / "raw", "demo", quirks=True)) / "raw"


@pytest.fixture(scope="session")
def tiny_raw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared(tmp_path_factory, "tiny", lambda folder: generate(folder / "raw", "tiny", quirks=False)) / "raw"


@pytest.fixture()
def tiny_copy(tiny_raw: Path, tmp_path: Path) -> Path:
    """A private copy of the tiny collection that a test may damage."""
    return Path(shutil.copytree(tiny_raw, tmp_path / "raw"))


@pytest.fixture(scope="session")
def demo_ingest(demo_quirks: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ingest tables of the demo collection (features and relations included), one folder each."""
    from regionbench.core import tables

    def make(out: Path) -> None:
        for folder in plans.folders("demo"):
            shard = ingest_shard(demo_quirks, folder)
            for name in ("images", "regions", "rejects", "features", "relations", "coverage"):
                tables.write_parquet(getattr(shard, name), out / folder / f"{name}.parquet")

    return shared(tmp_path_factory, "ingest", make)


# The user's pages: the README, then the manual in docs/, in reading order. Their fenced code
# blocks: an optional ``<!-- run by: FILE::TEST -->`` line, then the fence with the block's kind
# (sh, console, python, yaml, text).
MANUAL = (
    "README.md",
    "docs/cli.md",
    "docs/configuration.md",
    "docs/build.md",
    "docs/publishing.md",
    "docs/scoring.md",
    "docs/performance.md",
    "docs/cluster.md",
)
README_BLOCK = re.compile(r"^(?:<!-- run by: (?P<by>\S+) -->\n)?```(?P<kind>\w*)\n(?P<body>.*?)^```$", re.M | re.S)


@dataclass(frozen=True)
class ReadmeBlock:
    file: str  # the page, relative to the checkout
    line: int  # of the block's first line in its page
    kind: str
    body: str
    by: str | None  # the test that runs it elsewhere

    @property
    def where(self) -> str:
        return f"{self.file} line {self.line}"


def readme_blocks(heading: str | None = None) -> list[ReadmeBlock]:
    """The code blocks of the user's pages (``MANUAL``), or those of the section under
    ``heading`` (a whole line) in the page that has it."""
    found = []
    for page in MANUAL:
        text = (PROJECT / page).read_text(encoding="utf-8")
        start, end = 0, len(text)
        if heading is not None:
            if f"\n{heading}\n" not in text:
                continue
            start = text.index(f"\n{heading}\n") + len(heading) + 2
            following = text.find("\n#", start)  # the next heading ends the section
            end = following if following >= 0 else len(text)
        found += [
            ReadmeBlock(page, text.count("\n", 0, m.start("body")) + 1, m["kind"], m["body"], m["by"])
            for m in README_BLOCK.finditer(text, start, end)
        ]
    return found


def truth_label_maps(folder: Path, out: Path, image_ids: list[int] | None = None, ignore: int = 255) -> list[int]:
    """The reference annotator's label ids as 16-bit label-map PNGs in ``out``, one per test image
    of the release ``folder`` (``image_ids``: only these), ``ignore`` where it labels nothing;
    returns the images written."""
    from PIL import Image

    from regionbench.scoring.measures import confusion as semantic
    from regionbench.scoring.tasks import _masks
    from regionbench.scoring.tasks.semantic import class_maps

    data = regionbench.load(folder)
    images = _masks.scored_images(data, "test")
    _, index = semantic.label_codes(dict(zip(data.vocabulary["label_id"], data.vocabulary["label"], strict=True)))
    ids = {k: label_id for label_id, k in index.items()}
    out.mkdir()
    written = []
    ignore_value = ignore
    for image_id, label in class_maps(data, _masks.reference(data), images, index).items():
        if image_ids is not None and image_id not in image_ids:
            continue
        ignore = label >= len(index)  # no region, or regions of two labels
        values = np.where(ignore, ignore_value, np.vectorize(lambda k: ids[k])(np.where(ignore, 0, label)))
        Image.fromarray(values.astype(np.uint16)).save(out / f"{image_id}.png")
        written.append(image_id)
    return written


# --- the site of a release in a real browser (regionbench view) ---------------------------------

CHROMIUM = Path(os.environ.get("REGIONBENCH_CHROMIUM", "/usr/bin/chromium"))


def view(*args: str) -> subprocess.CompletedProcess:
    """``regionbench view`` in this process."""
    return regionbench_cli("view", *args)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Headless Chromium; the CI script installs it (tests/browser.sh install)."""
    if not CHROMIUM.is_file():
        pytest.fail(f"no {CHROMIUM}: install Debian's chromium (tests/browser.sh install) or set REGIONBENCH_CHROMIUM")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield chromium
        chromium.close()


def open_page(browser: Any, url: str, errors: list[str]) -> Any:
    """A page of ``url``; its console errors, page errors and failed requests go to ``errors``."""
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("requestfailed", lambda request: errors.append(f"failed: {request.url}"))
    page.goto(url)
    return page


def screenshot(page: Any, name: str, folder: Path) -> Path:
    """A full-page screenshot ``name`` of ``page`` in ``folder``, or in ``$REGIONBENCH_SCREENSHOTS``
    where set: the browser tests make docs/view.md's pictures (docs/view.md says how)."""
    where = Path(os.environ.get("REGIONBENCH_SCREENSHOTS") or folder)
    path = where / name
    page.screenshot(path=str(path), full_page=True)
    return path


def site_shows_the_release(browser: Any, folder: Path, out: Path, images: Path | None = None) -> None:
    """``view`` of the release ``folder`` (``images``: its raw tree) opened in Chromium: every
    image on the index, and on each image's page every region listed and those with a polygon
    drawn, with no console error."""
    import pandas as pd

    done = view(str(folder), "--out", str(out), *(["--images", str(images)] if images else []))
    assert done.returncode == 0, done.stderr
    regions = pd.read_parquet(folder / "data/regions.parquet", columns=["image_id", "geometry"])
    ids = sorted(pd.read_parquet(folder / "data/images.parquet", columns=["image_id"])["image_id"])
    errors: list[str] = []
    page = open_page(browser, f"file://{out}/index.html", errors)
    page.wait_for_selector("body[data-indexed=all]")
    assert page.inner_text("#count") == f"{len(ids)} of {len(ids)} images"
    for image_id in ids[:: max(1, len(ids) // 6)]:
        page.goto(f"file://{out}/image.html?id={image_id}")
        page.wait_for_selector("#regions tr")
        mine = regions[regions["image_id"] == image_id]
        assert page.locator("#regions tr").count() == len(mine) + 1
        assert page.locator("#outlines path").count() == mine["geometry"].notna().sum()
        page.wait_for_function("document.getElementById('picture').complete")
        assert page.evaluate("document.getElementById('picture').naturalWidth") > 0
    assert errors == []


# A PYTHONPATH of the caller's (a checkout's src/) would let the venv import the checkout.
CLEAN_ENV = {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "PYTHONHOME")}


def run(*cmd: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    """``cmd`` run in ``cwd`` without the checkout on its path; it must succeed."""
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd, env=CLEAN_ENV)
    assert done.returncode == 0, (cmd, done.stdout[-2000:], done.stderr[-2000:])
    return done


def _client_venv(work: Path) -> None:
    """A venv under ``work/venv`` holding the wheel built from the repository and its client
    dependencies (pinned by constraints.txt)."""
    # Build from a copy: setuptools leaves build/ beside the sources it builds.
    source = work / "source"
    shutil.copytree(PROJECT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(PROJECT / name, source / name)
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", work / "dist", source, cwd=work)
    (wheel,) = (work / "dist").glob("regionbench-*.whl")
    run(sys.executable, "-m", "venv", work / "venv", cwd=work)
    pip = work / "venv" / "bin" / "pip"
    run(pip, "install", "--quiet", "--constraint", PROJECT / "constraints.txt", wheel, cwd=work)


@pytest.fixture(scope="session")
def client_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel built from the repository and its client dependencies,
    made once a session across every worker."""
    return shared(tmp_path_factory, "client-venv", _client_venv) / "venv"


@pytest.fixture(scope="session")
def real_data() -> Callable[[str], Path]:
    """``real_data(name)``: the real collection ``name`` as its source distributes it, under the
    folder ``REGIONBENCH_REAL_DATA`` names (CI sets it); the test is skipped, saying why, where it
    is unset or lacks the collection (a user's clone)."""

    def get(name: str) -> Path:
        root = os.environ.get("REGIONBENCH_REAL_DATA")
        if not root:
            pytest.skip("REGIONBENCH_REAL_DATA is unset: no real collections on this machine")
        folder = Path(root) / name
        if not folder.is_dir():
            pytest.skip(f"REGIONBENCH_REAL_DATA ({root}) has no {name}/")
        return folder

    return get

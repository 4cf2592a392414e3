"""The ``regionbench`` command line."""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import io
import json
import os
import re
import shutil
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from regionbench import __version__
from regionbench.core import errors, numbers
from regionbench.core.errors import InputError

if TYPE_CHECKING:
    import http.server

    from regionbench.core.hierarchy import Hierarchy

# Each command imports what it uses when it runs: a call pays for its own work, not for every
# command's libraries (`regionbench --help` imports neither NumPy nor pyarrow).

# Commands of the build install (synth, export-saiapr, export-coco, hierarchy --saiapr) import their modules
# when they run: the client install (load, verify, evaluate, diff) lacks their dependencies.
SYNTH_PROFILES = ("demo", "paper", "tiny", "coco-demo")


class UserError(InputError):
    """Something the user can fix; printed as one line without a traceback."""


def find_project(start: Path | None = None) -> Path:
    """The workflow folder: the nearest folder holding a Snakefile, from ``start`` upwards."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "Snakefile").is_file() and (folder / "config" / "config.yaml").is_file():
            return folder
    raise UserError(
        f"no regionbench workflow (Snakefile) in {here} or above; run inside the checkout or pass --project-dir"
    )


@contextlib.contextmanager
def exclusive_build(project: Path) -> Iterator[int]:
    """Hold a kernel lock on ``project`` for a whole build; yield its file descriptor.

    The kernel releases the lock when every process holding it has ended, however it ended (even
    by SIGKILL or a lost session). So when it is free, no build runs here, and Snakemake's own lock
    files, which a killed build leaves behind and which would block the next run, are stale and
    safely removed: an interrupted build resumes with a plain ``regionbench build``.
    """
    state = project / ".snakemake"
    state.mkdir(parents=True, exist_ok=True)
    with (state / "regionbench-build.lock").open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(
                f"{project}: another regionbench build is running in this folder; wait for it to end or stop it"
            ) from None
        shutil.rmtree(state / "locks", ignore_errors=True)
        yield handle.fileno()


def cmd_synth(args: argparse.Namespace) -> int:
    from regionbench import synthetic

    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"{out}: already exists and is not empty; synth writes a new tree, choose another --out")
    given = {k: getattr(args, k) for k in ("annotators", "disagreement") if getattr(args, k) is not None}
    options = synthetic.Options(
        seed=args.seed, quirks=args.quirks, vocabulary=args.vocabulary, workers=args.workers, **given
    )
    start = time.perf_counter()
    parts = synthetic.generate(args.layout, args.out, args.profile, options)  # refuses an unknown layout first
    print(
        f"generating profile {args.profile!r} into {args.out} in the {args.layout} layout (seed {args.seed})",
        flush=True,
    )
    total = 0
    for part, regions in parts:
        total += regions
        print(f"{part}: {regions} regions", flush=True)
    print(f"done: {total} regions in {time.perf_counter() - start:.1f} s", flush=True)
    return 0


OUTPUT_FOLDERS = ("results/", "releases/", "resources/", "logs/")


def workflow_rules(project: Path) -> dict[str, str]:
    """Each rule of the workflow in ``project`` -> ``rule`` or ``checkpoint``, read from its files."""
    return {
        m.group(2): m.group(1)
        for path in [project / "Snakefile", *sorted((project / "rules").glob("*.smk"))]
        for m in re.finditer(r"^(rule|checkpoint)\s+(\w+)\s*:", path.read_text(encoding="utf-8"), re.M)
    }


def check_targets(project: Path, targets: list[str]) -> None:
    """Every build target is a rule of the workflow or a file under one of its output folders;
    anything else is a typo, named in one line (Snakemake would answer with a paragraph)."""
    rules = set(workflow_rules(project))
    for target in targets:
        if target not in rules and not target.startswith(OUTPUT_FOLDERS):
            raise UserError(
                f"build target {target!r}: neither a rule ({', '.join(sorted(rules))}) nor a file under "
                f"{', '.join(OUTPUT_FOLDERS)}; check the spelling"
            )


WRITTEN = (*OUTPUT_FOLDERS, ".snakemake/")  # what a build writes under its project
LOW_SPACE = 1 << 20  # bytes: a device with less free is full for a build


def check_writable(project: Path) -> None:
    """Every folder a build writes can be written (one not made yet: the project): a read-only
    one is one line before any job, where Snakemake would stop at its first output with a
    paragraph."""
    import tempfile

    for name in WRITTEN:
        folder = project / name if (project / name).is_dir() else project
        try:
            with tempfile.TemporaryFile(dir=folder):
                pass
        except OSError as exc:
            raise UserError(
                f"{_shown(folder)}: cannot write there ({exc.strerror}); a build writes its stages under "
                f"{', '.join(WRITTEN)}: make them writable, or build in another folder"
            ) from None


def full_device(project: Path) -> str | None:
    """One line naming the folder of ``project`` a build writes whose device is (nearly) full;
    None when every one has room (a Snakemake that stopped for want of space, outside a job)."""
    for name in WRITTEN:
        folder = project / name if (project / name).is_dir() else project
        with contextlib.suppress(OSError):
            found = os.statvfs(folder)
            if found.f_bavail * found.f_frsize < LOW_SPACE:
                return (
                    f"{_shown(folder)}: no space left on its device ({found.f_bavail * found.f_frsize:,} bytes free); "
                    "free some and run the same command again to resume"
                )
    return None


def _release_settings(project: Path, cfg: dict[str, Any], args: argparse.Namespace) -> Path:
    """The command line's release settings (``--previous``: a folder, a tag or none;
    ``--publish``) as one more config file, Snakemake's --config being flat; returns its path."""
    release = dict(cfg["release"])
    if previous := args.previous:
        if previous != "none" and Path(previous).exists():
            if not (Path(previous) / "manifest.json").is_file():
                raise UserError(f"--previous {previous}: not a release folder (no manifest.json)")
            previous = str(Path(previous).resolve())
        release["previous"] = previous
    if args.publish:
        release["publish"] = True
    extra = project / ".snakemake" / "release-settings.yaml"
    extra.parent.mkdir(parents=True, exist_ok=True)
    extra.write_text(json.dumps({"release": release}) + "\n")
    return extra


def cmd_build(args: argparse.Namespace) -> int:
    from regionbench import release
    from regionbench.pipeline import config as build_config  # jsonschema's 25 ms: the build's alone
    from regionbench.pipeline import driver, jobs

    project = Path(args.project_dir).resolve() if args.project_dir else find_project()
    overrides = [Path(p).resolve() for p in args.configfile]
    cfg, layers = build_config.load_layers(project, overrides)
    if args.publish:  # checked with the files' settings: a statement it needs is named at once
        layers.append(("--publish", {"release": {"publish": True}}))
        cfg = build_config.merge(cfg, layers[-1][1])
    build_config.validate(cfg, project / "schemas" / "config.schema.yaml", layers)
    build_config.raw_layout(cfg, layers.source_of(("raw_dir",)))
    build_config.check_vocabulary_dir(cfg, layers.source_of(("vocabulary_dir",)))
    check_targets(project, args.targets)
    profiles = project / "config" / "profiles"
    if not (profiles / args.profile / "config.yaml").is_file():
        known = ", ".join(sorted(p.name for p in profiles.iterdir() if (p / "config.yaml").is_file()))
        raise UserError(f"--profile {args.profile}: no such profile in {profiles}; choose one of: {known}")
    if args.previous or args.publish:
        overrides.append(_release_settings(project, cfg, args))
    # Targets first: Snakemake's --configfile takes every word after it. The profile is given
    # relative to the project (Snakemake runs there), as Snakemake prints it on its first line.
    cmd = [sys.executable, "-m", "snakemake", *args.targets, "--snakefile", str(project / "Snakefile"),
           "--directory", str(project), "--profile", f"config/profiles/{args.profile}"]  # fmt: skip
    if args.cores:
        cmd += ["--cores", str(args.cores)]
    if overrides:
        cmd += ["--configfile", *map(str, overrides)]
    if args.dry_run:
        cmd += ["--dry-run"]
    if not args.verbose:
        cmd += ["--logger", "regionbench"]  # snakemake_logger_plugin_regionbench
    cmd += args.snakemake_args
    env = dict(os.environ)
    # Rule scripts run with the interpreter found on PATH: make it this environment's.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    is_live = driver.live(sys.stderr)  # Snakemake's progress writes to a pipe to us: it is told
    env["REGIONBENCH_LIVE"] = "1" if is_live else "0"
    checkpoints = sorted(name for name, kind in workflow_rules(project).items() if kind == "checkpoint")
    env["REGIONBENCH_CHECKPOINTS"] = ",".join(checkpoints)  # the progress's total is a lower bound until they ran
    env["REGIONBENCH_HISTORY"] = str(project / "logs" / cfg["dataset"] / "benchmarks")  # the ETA's costs
    env["REGIONBENCH_CORES"] = str(args.cores or os.cpu_count() or 1)
    if not args.dry_run:
        check_writable(project)
    with exclusive_build(project) as lock:
        jobs.clear_failures(project)
        # Snakemake inherits the lock, so it stays held if this process is killed first.
        code = driver.run(cmd, sys.stderr, is_live, cwd=project, env=env, pass_fds=(lock,))
    if code:
        # The reason, not Snakemake's job report, is what the user reads last.
        messages = jobs.failures(project) or ([full] if (full := full_device(project)) else [])
        for message in messages:
            print(f"regionbench: {message}", file=sys.stderr)
        if not messages:
            print(
                f"regionbench: Snakemake stopped (exit {code}) outside any regionbench job: its message above "
                f"says why (job logs: {_shown(project / 'logs')})",
                file=sys.stderr,
            )
        # As for any command: 2 when the input or the machine is to blame, 3 for a bug.
        return 3 if jobs.bug_reported(project) else 2 if messages else code
    if not args.targets and not args.dry_run:
        folder = project / "releases" / cfg["dataset"] / f"v{cfg['release']['version']}"
        for line in release.summary(folder, _shown(folder), logs=_shown(project / "logs" / cfg["dataset"])):
            print(line)
    return code


def _shown(path: Path) -> str:
    """``path`` as the user would type it: relative to the current folder when under it."""
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def cmd_show(args: argparse.Namespace) -> int:
    import numpy as np
    from PIL import Image  # the build extra: figures are made where the release is built

    from regionbench.client import loader
    from regionbench.core import geometry
    from regionbench.pipeline import plots

    if Path(args.out).suffix.lower() not in plots.PICTURE_FORMATS:
        raise UserError(
            f"show --out {args.out}: its suffix names the picture's format; use one of {', '.join(plots.PICTURE_FORMATS)}"
        )
    rel = loader.load(args.release)
    known = sorted(rel.images["image_id"])
    ids = args.image or known[: args.count]
    unknown = sorted(set(ids) - set(known))
    if unknown:
        raise UserError(f"{args.release}: no image {unknown[0]}; the images are {known[0]}..{known[-1]}")
    regions = rel.regions_of(args.annotator)
    files = {i: f if isinstance(f, bytes) else f.read_bytes() for i, f in rel.image_sources(ids, args.images).items()}
    captions = rel.images.set_index("image_id")["caption_title"]
    panels = []
    for image_id in ids:
        with Image.open(io.BytesIO(files[image_id])) as im:
            pixels = np.asarray(im.convert("RGB"))
        mine = regions[regions["image_id"] == image_id]
        masks = [(r.label, geometry.from_rle(r.mask)) for r in mine.itertuples() if isinstance(r.mask, dict)]
        caption = captions[image_id]  # missing: None or NaN, as pandas gives it; COCO trees have none
        title = f"{image_id}: {caption}" if isinstance(caption, str) and caption else str(image_id)
        panels.append({"pixels": pixels, "masks": masks, "title": title})
    plots.release_images(panels, args.out)
    print(f"{args.out}: images {', '.join(map(str, ids))}, regions coloured by label")
    return 0


def _site_server(folder: Path, port: int) -> http.server.ThreadingHTTPServer:
    """An HTTP server of ``folder`` on 127.0.0.1:``port``, bound (a port in use is one line
    before any work), not yet serving; it does not log requests."""
    import functools
    import http.server

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            """Requests are not logged: the terminal keeps the site's line."""

    try:
        return http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(Quiet, directory=str(folder)))
    except OSError as exc:
        raise UserError(f"--port {port}: cannot serve there ({exc.strerror}); give another port") from None


def cmd_view(args: argparse.Namespace) -> int:
    from regionbench.client import loader, tasks, view  # thumbnails need Pillow: the build install

    data = loader.load(args.release, verify=not args.no_verify)
    run = _run_report(args.run) if args.run else None
    server = _site_server(Path(args.out), args.port) if args.serve else None
    site = view.write_site(data, Path(args.out), args.images, run, predictions=args.predictions)
    if run is not None and hasattr(tasks.registry().get(str(run.get("task"))), "shapes") and args.predictions is None:
        print(f"the run's {run['task']} are scored, not drawn: give --predictions PATH (what the report scored)")
    print(site.line(), flush=True)
    if server is not None:
        import signal

        # Ctrl-C stops it even where it was started with SIGINT ignored (a background job of a
        # shell without job control, a test runner's worker): the disposition is inherited.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        with server:
            print(f"serving {site.folder} at http://127.0.0.1:{args.port}/ (Ctrl-C stops)", flush=True)
            try:
                server.serve_forever()
            except KeyboardInterrupt:
                print(f"stopped serving {site.folder}", flush=True)
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from regionbench import release

    if not Path(args.folder).is_dir():  # an input error like every other (exit 2), not a failed verification
        raise UserError(f"{args.folder}: no such folder; give a release folder (releases/<dataset>/v<version>)")
    problems = release.verify(Path(args.folder), expect=args.expect)
    for line in problems:
        print(f"{args.folder}: {line}")
    if problems:
        return 1
    manifest = release.read_manifest(Path(args.folder))
    rows = ", ".join(f"{name} {entry['rows']}" for name, entry in manifest["tables"].items())
    print(
        f"{args.folder}: {manifest['dataset']} v{manifest['version']} verified ({len(manifest['files'])} files; {rows})"
    )
    pinned = "the pinned digest" if args.expect else "pin it with --expect"
    print(f"{args.folder}: digest sha256:{manifest['digest']} ({pinned})")
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from regionbench import release
    from regionbench.client import loader
    from regionbench.release import changes

    for folder in (args.old, args.new):
        loader.load(folder)  # verified: one clear line if a folder is not a sound release
    diff = release.diff_releases(Path(args.old), Path(args.new), examples=args.examples)
    *records, bump = diff.lines()
    # how the records changed, before the bump they need (the last line, as before)
    for line in [*records, *changes.changes(Path(args.old), Path(args.new)).lines(args.examples), bump]:
        print(line)
    if args.run:
        _rescored_run(args)
    if args.check:
        old, new = (release.read_manifest(Path(folder))["version"] for folder in (args.old, args.new))
        try:
            release.check_bump(old, new, diff)
        except release.ReleaseError as exc:
            print(f"bump check failed: {exc}")
            return 1
        print(f"bump check: {old} -> {new} is enough")
    return 0


def _run_report(path: str) -> dict:
    """The report ``evaluate --out`` wrote at ``path``; a UserError naming it otherwise."""
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"--run {path}: not a report of evaluate --out ({exc})") from None
    if not isinstance(report, dict):
        raise UserError(f"--run {path}: not a report of evaluate --out (a JSON object)")
    return report


def _rescored_run(args: argparse.Namespace) -> None:
    """diff --run: the run scored on both releases, measure by measure."""
    from regionbench.client import loader, tasks

    if not args.predictions:
        raise UserError("--run needs --predictions: the file or folder the report scored")
    report = _run_report(args.run)
    scored = [tasks.rescore(loader.load(folder), report, Path(args.predictions)) for folder in (args.old, args.new)]
    before, after = (tasks.measures(r) for r in scored)
    print(f"run {args.run} ({report.get('task')}) scored on both:")
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        change = f"{b - a:+.4f}" if a is not None and b is not None else "n/a"
        print(f"  {name:<28} {a if a is None else f'{a:.4f}'} -> {b if b is None else f'{b:.4f}'} ({change})")


def cmd_audit(args: argparse.Namespace) -> int:
    from regionbench.audit import releases
    from regionbench.client import loader
    from regionbench.core import tables

    found = [loader.load(folder) for folder in (args.release, *([args.other] if args.other else []))]
    names = [f"{r.dataset} v{r.version}" for r in found]
    if len(names) == 2 and names[0] == names[1]:
        names = [f"{names[0]} (first)", f"{names[1]} (second)"]
    hashed = [releases.hashed(name, r) for name, r in zip(names, found, strict=True)]
    threshold = args.threshold if args.threshold is not None else releases.build_threshold(found[0])
    report = (
        releases.audit_one(hashed[0], threshold)
        if len(hashed) == 1
        else releases.audit_two(hashed[0], hashed[1], threshold)
    )
    for line in releases.lines(report, args.examples):
        print(line)
    if args.json:
        tables.write_json(args.json, report)
    return 1 if args.check and releases.leaks(report) else 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from regionbench.pipeline.reproduce import reproduce  # clones and builds: the build install

    workdir = Path(args.workdir).resolve() if args.workdir else None
    outcome = reproduce(args.repo, args.tag, workdir=workdir, cores=args.cores)
    for line in outcome.lines():
        print(line)
    return 0 if outcome.identical else 1


def cmd_export(args: argparse.Namespace) -> int:
    from regionbench.client import exports, loader

    data = loader.load(args.release)  # verified: a damaged release is one line, not a half-written tree
    images = Path(args.images) if args.images else None
    for line in exports.export(data, Path(args.out), args.format, images, args.annotator):
        print(line)
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    import pyarrow as pa

    from regionbench.client import loader, tasks
    from regionbench.core import tables

    # A scoring reads the release a range of images at a time: Arrow's default allocator
    # (mimalloc) keeps what each read freed, 8 MiB a range; the system's gives it back.
    pa.set_memory_pool(pa.system_memory_pool())
    given = tasks.settings_from_args(args)
    tasks.settings_of(args.task, **given)  # a setting of another task: one line before the release is read
    said = lambda line: print(line, flush=True)  # noqa: E731
    data = loader.load(args.release, args.rev, verify=not args.no_verify)
    if args.executor:
        from regionbench.client import scattering

        said(tasks.scoped(data, args.task, **given)[1].line())  # what the jobs score, said before they start

        try:
            project: Path | None = find_project()
        except UserError:  # outside a workflow folder: the executor's own defaults
            project = None
        report = scattering.score(
            args.release, args.rev, not args.no_verify, Path(args.predictions), args.task, given, args.by_source,
            args.executor, args.jobs, args.cores, Path(args.work_dir) if args.work_dir else None, project, said,
        )  # fmt: skip
    else:
        report = tasks.evaluate(
            data, args.predictions, args.task, progress=said, cores=args.cores, by_source=args.by_source, **given
        )
    print(tasks.render(report, scoped=False))
    if args.out:
        tables.write_json(args.out, report)
        print(f"report written to {args.out}")
    return 0


def cmd_baselines(args: argparse.Namespace) -> int:
    import pyarrow as pa

    from regionbench import baselines
    from regionbench.client import loader
    from regionbench.io import layouts
    from regionbench.release.card import baseline_table, markdown_table, skipped_methods

    pa.set_memory_pool(pa.system_memory_pool())
    for name in args.method or []:
        baselines.get(name)  # an unknown one: one line before the release is read
    data = loader.load(args.release)
    names = args.method
    if not names:  # those of the release's kind, as a build chooses them
        known = layouts.registry().get(str(data.manifest.get("layout")))
        names = baselines.chosen("auto", known.about.baselines if known is not None else None)
        if not names:
            raise InputError(
                f"{args.release}: no reference method is of this release's kind (its layout "
                f"{data.manifest.get('layout')}); name them with --method"
            )
    said = lambda line: print(line, flush=True)  # noqa: E731
    root = Path(args.images) if args.images else None
    if not baselines.stage(data, names, Path(args.out), root, args.cores, said):
        why = "; ".join(f"{name}: {reason}" for name, reason in skipped_methods(Path(args.out)).items())
        raise InputError(f"{args.release}: no reference method could run on it ({why})")
    header, rows = baseline_table(Path(args.out), names)
    print("\n".join(markdown_table(header, rows)))
    print(f"reports written under {args.out}")
    return 0


def _hierarchy(args: argparse.Namespace) -> Hierarchy:
    import pyarrow.parquet as pq

    from regionbench.core.hierarchy import Hierarchy
    from regionbench.pipeline import vocabulary

    if args.saiapr:
        from regionbench.io.saiapr import hierarchy_from_saiapr

        return hierarchy_from_saiapr(args.saiapr)
    path = Path(args.yaml) if args.yaml else vocabulary.DEFAULT_DIR / "hierarchy.yaml"
    tree = Hierarchy.from_yaml(path)
    if args.vocabulary:
        table = pq.read_table(args.vocabulary, columns=["label", "region_count"]).to_pydict()
        tree.counts = dict(zip(table["label"], table["region_count"], strict=True))
    return tree


def cmd_conformance(args: argparse.Namespace) -> int:
    import fnmatch
    import json

    from regionbench import conformance

    try:
        root = Path(args.corpus) if args.corpus else find_project() / "conformance"
    except UserError:  # an installed wheel, outside a checkout: the corpus lives in the repository
        raise UserError(
            "no conformance corpus here: run inside the checkout (its conformance/) or give --corpus DIR"
        ) from None
    corpus = conformance.cases(root)
    if args.family:
        corpus = [c for c in corpus if c.family in args.family]
    if args.case:
        corpus = [c for c in corpus if any(fnmatch.fnmatchcase(c.name, pattern) for pattern in args.case)]
    if not corpus:
        raise UserError(f"{root}: no case of the corpus is chosen by --family and --case")
    engines: dict[str, conformance.Engine | None] = dict.fromkeys(args.engine or conformance.installed())
    unknown = [e for e in engines if e not in conformance.ENGINES]
    if unknown:
        raise UserError(
            f"--engine {unknown[0]}: no such engine; choose among {', '.join(conformance.ENGINES)} "
            "(or give a command with --command)"
        )
    missing = [e for e in engines if e not in conformance.installed()]
    if missing:
        raise UserError(f"--engine {missing[0]}: not installed here (pip install {missing[0]})")
    if args.command:
        engines["command"] = conformance.command_engine(args.command)
    rows: list[conformance.Row] = []
    for case in corpus:
        for engine, run in engines.items():
            if (engine == "command" and case.family == "instances") or (
                engine != "command" and conformance.handles(engine, case)
            ):
                rows += conformance.check(case, engine, run)
    failed = [r for r in rows if not r.ok]
    # Every engine the run leaves out, and why: a conforming line must not hide an engine never run.
    skipped = [] if args.engine else [(e, "not installed here") for e in conformance.ENGINES if e not in engines]
    skipped += [(e, "it scores none of the chosen cases") for e in engines if not any(r.engine == e for r in rows)]
    if args.json:
        print(json.dumps([r.__dict__ for r in rows], indent=1))
        for engine, why in skipped:
            print(f"{engine}: skipped, {why}", file=sys.stderr)
    else:
        for line in conformance.table(rows):
            print(line)
        for engine, why in skipped:
            print(f"{engine}: skipped, {why}")
        for engine in engines:
            mine = [r for r in rows if r.engine == engine]
            if not mine:
                continue
            cases = {r.case for r in mine}
            wrong = {r.case for r in mine if not r.ok}
            print(
                f"{engine}: {len(cases) - len(wrong)} of {len(cases)} cases conform"
                + (f"; differ: {len(wrong)}" if wrong else "")
            )
    return 1 if failed else 0


def cmd_hierarchy_show(args: argparse.Namespace) -> int:
    print(_hierarchy(args).render())
    return 0


def cmd_hierarchy_ehier(args: argparse.Namespace) -> int:
    tree = _hierarchy(args)
    errors = tree.e_hierarchy([args.true] * len(args.pred), args.pred, args.direction, args.threshold)
    for pred, e in zip(args.pred, errors, strict=True):
        print(f"e_hierarchy({args.true}, {pred}) = {e:.4f}{'  (soft-correct)' if e < 1 else ''}")
    return 0


def vocabulary_register(args: argparse.Namespace) -> int:
    from regionbench.core.hierarchy import Hierarchy
    from regionbench.pipeline import vocabulary

    folder = Path(args.dir) if args.dir else vocabulary.DEFAULT_DIR
    registry_path = Path(args.registry) if args.registry else folder / "label_ids.tsv"
    tree = Hierarchy.from_yaml(Path(args.yaml) if args.yaml else folder / "hierarchy.yaml")
    old = vocabulary.Registry.read(registry_path)
    new = old.register(tree.labels)
    added = sorted(set(new.ids()) - set(old.ids()))
    retired = sorted(set(old.ids()) - set(new.ids()))
    new.write(registry_path)
    print(
        f"{registry_path}: {len(added)} added ({', '.join(added) or '-'}), {len(retired)} retired ({', '.join(retired) or '-'})"
    )
    return 0


def vocabulary_from_source(args: argparse.Namespace) -> int:
    from regionbench.io import layouts
    from regionbench.pipeline import vocabulary

    layout = args.layout or layouts.detect(args.root).name
    counts = vocabulary.derive(layout, Path(args.root), Path(args.out))
    found = ", ".join(f"{n} {what}" for what, n in counts.items() if what not in ("new_ids", "renamed"))
    print(f"{args.out}: {found}, {counts['new_ids']} new ids; set vocabulary_dir: {args.out} in the config")
    if counts.get("renamed"):
        print(
            f"{args.out}/category_names.tsv: {counts['renamed']} category names that are not labels as they stand, "
            "each with the label it maps to (lower case, '-' for spaces and other characters)"
        )
    return 0


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: what is wrong, then where to read more (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}; see {self.prog} --help\n")


def _synth_command(sub: argparse._SubParsersAction) -> None:
    """synth: a synthetic collection."""
    s = sub.add_parser(
        "synth",
        help="write a synthetic collection in any raw layout it generates (synth --help lists them)",
    )
    s.add_argument(
        "--profile",
        choices=SYNTH_PROFILES,
        default="demo",
        help="collection: paper (20,000 images), demo (300, the default), tiny (24), coco-demo (200)",
    )
    s.add_argument("--out", required=True, help="folder to write the collection into")
    s.add_argument("--seed", type=numbers.argument(int, 0), default=0, help="seed of the generator (default 0)")
    s.add_argument("--quirks", action="store_true", help="carry every quirk of the official files")
    s.add_argument(
        "--workers", type=numbers.argument(int, 1), default=None, help="parallel folders (default: all cores)"
    )
    s.add_argument("--vocabulary", metavar="DIR", help="vocabulary folder (default: the library's SAIAPR vocabulary)")
    s.add_argument(
        "--layout",
        default="saiapr",
        # Written out: the client install cannot import the writers to list them (a test holds
        # these names to the registries).
        help="raw layout to write: ade20k, ade20k-full, bsds500, camvid, cityscapes, classmap, coco, coco-panoptic, "
        "cocostuff, labelme, lip, mapillary, pascal-context, saiapr or voc; saiapr when not given",
    )
    s.add_argument(
        "--annotators",
        type=numbers.argument(int, 1),
        help="coco, coco-panoptic, bsds500: annotators tracing every scene (default 3)",
    )
    s.add_argument(
        "--disagreement",
        type=numbers.argument(float, 0, 1),
        help="coco: how much they differ, 0 (none) to 1 (default 0.3)",
    )
    s.set_defaults(func=cmd_synth)


def _build_command(sub: argparse._SubParsersAction) -> None:
    """build: the workflow."""
    b = sub.add_parser("build", help="run the Snakemake workflow (default target: the whole build)")
    b.add_argument("targets", nargs="*", help="Snakemake targets (files or rule names)")
    b.add_argument("--cores", type=numbers.argument(int, 1), default=None, help="cores to use (default: the profile's)")
    b.add_argument(
        "--configfile",
        nargs="+",
        action="extend",
        default=[],
        metavar="FILE",
        help="config files overriding config/config.yaml, later ones winning (give targets before this option)",
    )
    b.add_argument(
        "--verbose", "-v", action="store_true", help="Snakemake's full report of every job instead of one line a stage"
    )
    b.add_argument("--dry-run", "-n", action="store_true", help="list the jobs without running them")
    b.add_argument(
        "--previous",
        metavar="DIR|TAG|none",
        help="release to check the bump against: a folder, a tag <dataset>-vX.Y.Z, or none (default: release.previous)",
    )
    b.add_argument(
        "--publish",
        action="store_true",
        help="a release for publication (release.publish): refused while a statement it needs is unset",
    )
    b.add_argument("--profile", default="default", help="profile under config/profiles/")
    b.add_argument("--project-dir", default=None, help="workflow checkout (default: found from the current folder)")
    b.add_argument("--snakemake-args", nargs=argparse.REMAINDER, default=[], help="further Snakemake options, verbatim")
    b.set_defaults(func=cmd_build)


def _show_command(sub: argparse._SubParsersAction) -> None:
    """show: pictures of a release."""
    sh = sub.add_parser("show", help="draw images of a release with their regions coloured by label, to a PNG")
    sh.add_argument("release", help="release folder")
    sh.add_argument("--image", type=numbers.argument(int, 0), action="append", help="an image id to draw (repeatable)")
    sh.add_argument(
        "--count", type=numbers.argument(int, 1), default=4, help="without --image: the first N images (default 4)"
    )
    sh.add_argument("--out", default="show.png", metavar="PNG", help="the picture to write (default show.png)")
    sh.add_argument("--images", metavar="ROOT", help="raw tree to read the images from (default: the release's own)")
    sh.add_argument("--annotator", default=None, help="whose regions to draw (default: the reference annotator)")
    sh.set_defaults(func=cmd_show)


def _view_command(sub: argparse._SubParsersAction) -> None:
    """view: a release as a static site."""
    vw = sub.add_parser("view", help="write a release (and a scored run) as a static site that opens from file://")
    vw.add_argument("release", help="release folder")
    vw.add_argument("--out", default="site", metavar="DIR", help="the folder to write (default site)")
    vw.add_argument("--images", metavar="ROOT", help="raw tree to read the images from (default: the release's own)")
    vw.add_argument("--run", metavar="REPORT", help="an evaluate --out report: its per-image scores beside each image")
    vw.add_argument(
        "--predictions",
        metavar="PATH",
        help="with --run of a mask task: the results file or folder it scored, drawn beside the truth",
    )
    vw.add_argument("--no-verify", action="store_true", help="write the site of a release that does not verify")
    vw.add_argument("--serve", action="store_true", help="then serve the folder at http://127.0.0.1:PORT until Ctrl-C")
    vw.add_argument(
        "--port", type=numbers.argument(int, 1, 65535), default=8000, help="the port of --serve (default 8000)"
    )
    vw.set_defaults(func=cmd_view)


def _verify_command(sub: argparse._SubParsersAction) -> None:
    """verify: a release folder."""
    ver = sub.add_parser("verify", help="check a release folder: checksums, schemas, row counts, content hashes")
    ver.add_argument("folder", help="release folder (releases/<dataset>/v<X.Y.Z>)")
    ver.add_argument(
        "--expect",
        metavar="DIGEST",
        help="the manifest digest the release must have (as a tag, DVC lock or paper pinned it): "
        "a release edited and sealed again is refused",
    )
    ver.set_defaults(func=cmd_verify)


def _diff_command(sub: argparse._SubParsersAction) -> None:
    """diff: two releases."""
    d = sub.add_parser("diff", help="records added, removed and changed between two releases; the bump they need")
    d.add_argument("old", help="the earlier release folder")
    d.add_argument("new", help="the later release folder")
    d.add_argument("--examples", type=numbers.argument(int, 0), default=3, help="keys to show per table and kind")
    d.add_argument("--check", action="store_true", help="exit 1 unless NEW's version is enough of a bump over OLD's")
    d.add_argument("--run", metavar="REPORT", help="an evaluate report (--out): score its run on both releases")
    d.add_argument("--predictions", metavar="PATH", help="with --run: the predictions the report scored")
    d.set_defaults(func=cmd_diff)


def _audit_command(sub: argparse._SubParsersAction) -> None:
    """audit: near-duplicates in a release or across two."""
    a = sub.add_parser("audit", help="near-duplicate images in a release (across its splits), or across two releases")
    a.add_argument("release", help="a release folder")
    a.add_argument("other", nargs="?", help="a second release folder: report its images that near-copy the first's")
    a.add_argument(
        "--threshold",
        type=numbers.argument(int, 0, 128),
        help="bits of 128 (DCT and difference hash) two near-copies may differ in (default: the build's)",
    )
    a.add_argument("--examples", type=numbers.argument(int, 0), default=5, help="pairs to print per kind")
    a.add_argument("--json", metavar="FILE", help="write the whole report, every pair, as JSON")
    a.add_argument(
        "--check", action="store_true", help="exit 1 when a pair crosses the subsets' split, or the two releases"
    )
    a.set_defaults(func=cmd_audit)


def _reproduce_command(sub: argparse._SubParsersAction) -> None:
    """reproduce: a tag rebuilt."""
    r = sub.add_parser(
        "reproduce", help="clone the repository at a tag, rebuild its release, compare every file with the tracked one"
    )
    r.add_argument("tag", help="a release tag <dataset>-vX.Y.Z")
    r.add_argument("--repo", default=".", help="git repository, path or URL (default: the current folder)")
    r.add_argument("--workdir", help="where to clone and build (default: a temporary folder, removed after)")
    r.add_argument("--cores", type=numbers.argument(int, 1), default=2, help="cores for the rebuild")
    r.set_defaults(func=cmd_reproduce)


# The commands of one format each, kept as aliases of ``export --format`` for one version.
EXPORT_ALIASES = {"export-saiapr": "saiapr", "export-coco": "coco", "export-imageclef": "imageclef"}


def _export_command(sub: argparse._SubParsersAction) -> None:
    """export: a release in another format's files."""
    for command in ("export", *EXPORT_ALIASES):
        alias = EXPORT_ALIASES.get(command)
        e = sub.add_parser(
            command,
            help="write a release in another format's files (export --help lists them)"
            if alias is None
            else f"the same as export --format {alias} (kept for one version)",
        )
        e.add_argument("release", help="release folder")
        e.add_argument("out", help="folder to write (must not exist)")
        if alias is None:
            e.add_argument(
                "--format",
                required=True,
                help="ade20k, camvid, cityscapes, classmap, coco, coco-panoptic, cocostuff, imageclef, labelme, lip, "
                "mapillary, pascal-context, saiapr or voc (any layout that exports, and ImageCLEF)",
            )
        else:
            e.set_defaults(format=alias)
        e.add_argument(
            "--images", metavar="ROOT", help="raw tree to copy the images from (checked against their sha256)"
        )
        e.add_argument(
            "--annotator", help="whose regions (default: saiapr the one annotator; coco every human annotator)"
        )
        e.set_defaults(func=cmd_export)


def _evaluate_command(sub: argparse._SubParsersAction, tasks_options: bool = True) -> None:
    """evaluate: predictions scored; the task options come from the task registry (every task
    module imported: only when the command line is an evaluate, or for the whole parser)."""
    ev = sub.add_parser("evaluate", help="score predictions against a release (any task of the registry)")
    ev.add_argument("--release", required=True, metavar="SRC", help="release folder, or git+DVC repository with --rev")
    ev.add_argument("--rev", default=None, help="git revision (tag) of the repository")
    ev.add_argument("--predictions", required=True, metavar="PATH", help="the predictions: a file or a folder, by task")
    ev.add_argument("--out", default=None, metavar="JSON", help="write the full report here")
    ev.add_argument(
        "--cores",
        type=numbers.argument(int, 1),
        default=None,
        metavar="N",
        help="processes to score on (default: every core; the report is the same for any)",
    )
    ev.add_argument(
        "--by-source",
        action="store_true",
        help="score against each annotator too, grouped by who or what drew the truth (regions.drawn_by: human, model, consensus)",
    )
    ev.add_argument(
        "--no-verify",
        action="store_true",
        help="score without verifying the release first (a verified release is remembered, so this rarely saves time)",
    )
    jobs = ev.add_argument_group("scoring as jobs (Snakemake: needs regionbench[build])")
    jobs.add_argument(
        "--executor",
        choices=["local", "slurm"],
        default=None,
        help="score as --jobs jobs and a gathering through Snakemake: on this machine (local) or on a SLURM "
        "cluster (the project's config/profiles/slurm); the report is the one process's, to the bit",
    )
    jobs.add_argument(
        "--jobs", type=numbers.argument(int, 1), default=4, metavar="N", help="part jobs of --executor (default 4)"
    )
    jobs.add_argument(
        "--work-dir",
        default=None,
        metavar="DIR",
        help="--executor's work folder, seen by every job at the same path (default: a new folder here, removed after)",
    )
    if tasks_options:
        from regionbench.client import tasks

        tasks.add_arguments(ev)
        # an option several tasks declare (--method) is held to the chosen task's choices
        ev.set_defaults(check_arguments=lambda args: tasks.check_arguments(ev, args))
    ev.set_defaults(func=cmd_evaluate)


def _hierarchy_command(sub: argparse._SubParsersAction) -> None:
    """hierarchy: the label tree."""
    bl = sub.add_parser(
        "baselines", help="run the reference methods on a release's scored images and score them as predictions"
    )
    bl.add_argument("release", help="a release folder")
    bl.add_argument("--out", required=True, metavar="DIR", help="where each method's predictions and reports go")
    bl.add_argument(
        "--method",
        nargs="+",
        metavar="NAME",
        help="these methods (default: those of the release's kind, as a build runs)",
    )
    bl.add_argument("--images", metavar="ROOT", help="the raw tree, when the release does not embed its images")
    bl.add_argument(
        "--cores", type=numbers.argument(int, 1), help="processes to predict and score on (default: every core)"
    )
    bl.set_defaults(func=cmd_baselines)

    h = sub.add_parser("hierarchy", help="inspect the label hierarchy")
    hsub = h.add_subparsers(dest="action", required=True)
    for name, func, text in (
        ("show", cmd_hierarchy_show, "print the tree with depths, counts and conflicts"),
        ("ehier", cmd_hierarchy_ehier, "print e_hierarchy of predictions against a true label"),
    ):
        a = hsub.add_parser(name, help=text)
        source = a.add_mutually_exclusive_group()
        source.add_argument("--saiapr", metavar="ROOT", help="rebuild from a SAIAPR tree's ontology_path.txt files")
        source.add_argument("--yaml", metavar="PATH", help="hierarchy.yaml (default: the library's)")
        a.add_argument("--vocabulary", metavar="PARQUET", help="vocabulary.parquet whose region counts to show")
        a.set_defaults(func=func)
        if name == "ehier":
            a.add_argument("true", help="the true label")
            a.add_argument("pred", nargs="+", help="predicted labels, each scored against TRUE")
            a.add_argument(
                "--direction",
                choices=["any", "specific", "general"],
                default="any",
                help="credit ancestors and descendants (any), only labels below TRUE (specific) or above it (general)",
            )
            a.add_argument(
                "--threshold", type=numbers.argument(float, 0, 1), default=None, help="e above it counts as 1"
            )


def _vocabulary_command(sub: argparse._SubParsersAction) -> None:
    """vocabulary: the vocabulary folder."""
    v = sub.add_parser("vocabulary", help="maintain the vocabulary")
    vsub = v.add_subparsers(dest="action", required=True)
    r = vsub.add_parser("register", help="append new hierarchy labels to the id registry, retire removed ones")
    r.add_argument("--dir", metavar="DIR", help="vocabulary folder (default: the library's SAIAPR vocabulary)")
    r.add_argument("--yaml", metavar="PATH", help="hierarchy.yaml (default: DIR/hierarchy.yaml)")
    r.add_argument("--registry", metavar="PATH", help="label_ids.tsv (default: DIR/label_ids.tsv)")
    r.set_defaults(func=vocabulary_register)
    for command in ("from-source", "from-coco"):
        fc = vsub.add_parser(
            command,
            help="a vocabulary and hierarchy from a raw tree's own categories (any layout that names them)"
            if command == "from-source"
            else "the same as from-source --layout coco (kept for one version)",
        )
        fc.add_argument(
            "root",
            help="raw tree (COCO: images/ and annotations/<annotator>.json; SAIAPR: wlist.txt, NN/ontology_path.txt)",
        )
        fc.add_argument("--out", required=True, metavar="DIR", help="vocabulary folder to write (its registry is kept)")
        if command == "from-source":
            fc.add_argument("--layout", default=None, help="the tree's layout (default: detected)")
        else:
            fc.set_defaults(layout="coco")
        fc.set_defaults(func=vocabulary_from_source)


def _conformance_command(sub: argparse._SubParsersAction) -> None:
    """conformance: the scoring corpus against the engines installed."""
    c = sub.add_parser(
        "conformance",
        help="run the scoring conformance corpus (truths, runs, the reference tools' own figures) against engines",
    )
    c.add_argument("--corpus", metavar="DIR", help="the corpus folder (default: the checkout's conformance/)")
    c.add_argument(
        "--engine", action="append", metavar="NAME",
        help="an engine to check: cityscapesscripts, faster-coco-eval, lvis, panopticapi, pycocotools, regionbench "
        "or tidecv (default: every one installed)",
    )  # fmt: skip
    c.add_argument(
        "--command", metavar="CMD",
        help="an engine that is a command: CMD with {truth}, {run} and {out}, writing COCOeval's 12 stats to {out} as "
        "a JSON list (the instances cases)",
    )  # fmt: skip
    c.add_argument(
        "--family",
        action="append",
        choices=["instances", "tide", "lvis", "panoptic", "semantic", "segments", "boundaries"],  # conformance.FAMILIES
        help="only these cases",
    )
    c.add_argument("--case", action="append", metavar="PATTERN", help="only the cases named so (instances/segm/ties-*)")
    c.add_argument("--json", action="store_true", help="every figure as JSON (for CI)")
    c.set_defaults(func=cmd_conformance)


def parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line; given ``argv``, only what parsing it needs (evaluate's task
    options, which import every task, only for an evaluate)."""
    command = None if argv is None else next((a for a in argv if not a.startswith("-")), "")
    p = Parser(prog="regionbench", description="Build, verify and evaluate region-annotated image benchmarks.")
    p.add_argument("--version", action="version", version=f"regionbench {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for add in (
        _synth_command,
        _build_command,
        _show_command,
        _view_command,
        _verify_command,
        _diff_command,
        _audit_command,
        _reproduce_command,
        _export_command,
        _conformance_command,
        lambda sub: _evaluate_command(sub, tasks_options=command in (None, "evaluate")),
        _hierarchy_command,
        _vocabulary_command,
    ):
        add(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run a subcommand: 0 on success; a user-caused error (``errors.describe``) is one line
    per problem and exit 2; a bug shows its traceback, a request to report it, and exit 3."""
    argv = sys.argv[1:] if argv is None else argv
    args = parser(argv).parse_args(argv)
    if (check_arguments := getattr(args, "check_arguments", None)) is not None:
        check_arguments(args)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("regionbench: interrupted; what finished is kept: run the same command again to resume", file=sys.stderr)
        return 130
    except Exception as exc:
        message = errors.describe(exc)
        if message is None:
            traceback.print_exc()
            print(errors.BUG_HINT, file=sys.stderr)
            return 3
        print(f"regionbench: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

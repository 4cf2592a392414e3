"""The commands that make a release: ``synth`` (a generated raw tree), ``build`` (the Snakemake
workflow, with its checks before any job and its one-line failures) and ``reproduce`` (a tag
rebuilt and compared)."""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from regionbench.cli.common import UserError, find_project, shown
from regionbench.core import numbers

# Commands of the build install (synth, export-saiapr, export-coco, hierarchy --saiapr) import their modules
# when they run: the client install (load, verify, evaluate, diff) lacks their dependencies.
SYNTH_PROFILES = ("demo", "paper", "tiny", "coco-demo")


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
                f"{shown(folder)}: cannot write there ({exc.strerror}); a build writes its stages under "
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
                    f"{shown(folder)}: no space left on its device ({found.f_bavail * found.f_frsize:,} bytes free); "
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
                f"says why (job logs: {shown(project / 'logs')})",
                file=sys.stderr,
            )
        # As for any command: 2 when the input or the machine is to blame, 3 for a bug.
        return 3 if jobs.bug_reported(project) else 2 if messages else code
    if not args.targets and not args.dry_run:
        folder = project / "releases" / cfg["dataset"] / f"v{cfg['release']['version']}"
        for line in release.summary(folder, shown(folder), logs=shown(project / "logs" / cfg["dataset"])):
            print(line)
    return code


def cmd_reproduce(args: argparse.Namespace) -> int:
    from regionbench.pipeline.reproduce import reproduce  # clones and builds: the build install

    workdir = Path(args.workdir).resolve() if args.workdir else None
    outcome = reproduce(args.repo, args.tag, workdir=workdir, cores=args.cores)
    for line in outcome.lines():
        print(line)
    return 0 if outcome.identical else 1


def add_synth(sub: argparse._SubParsersAction) -> None:
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
        "cocostuff, labelme, lip, mapillary, pascal-context, saco, saiapr or voc; saiapr when not given",
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


def add_build(sub: argparse._SubParsersAction) -> None:
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


def add_reproduce(sub: argparse._SubParsersAction) -> None:
    """reproduce: a tag rebuilt."""
    r = sub.add_parser(
        "reproduce", help="clone the repository at a tag, rebuild its release, compare every file with the tracked one"
    )
    r.add_argument("tag", help="a release tag <dataset>-vX.Y.Z")
    r.add_argument("--repo", default=".", help="git repository, path or URL (default: the current folder)")
    r.add_argument("--workdir", help="where to clone and build (default: a temporary folder, removed after)")
    r.add_argument("--cores", type=numbers.argument(int, 1), default=2, help="cores for the rebuild")
    r.set_defaults(func=cmd_reproduce)

"""The ``regionbench`` command line."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from regionbench import config as build_config
from regionbench import synth


class UserError(Exception):
    """Something the user can fix; printed as one line without a traceback."""


def find_project(start: Path | None = None) -> Path:
    """The workflow folder: the nearest folder holding a Snakefile, from ``start`` upwards."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "Snakefile").is_file() and (folder / "config" / "config.yaml").is_file():
            return folder
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "Snakefile").is_file():
        return checkout
    raise UserError(
        f"no regionbench workflow (Snakefile) in {here} or above; run inside the checkout or pass --project-dir"
    )


def cmd_synth(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    total = 0
    folders = synth.folders(args.profile)
    print(f"generating profile {args.profile!r} into {args.out} ({len(folders)} folders, seed {args.seed})", flush=True)
    for done, (folder, regions) in enumerate(
        synth.write_collection(args.out, args.profile, args.seed, args.quirks, args.workers), start=1
    ):
        total += regions
        print(f"[{done}/{len(folders)}] folder {folder}: {regions} regions", flush=True)
    print(f"done: {total} regions in {time.perf_counter() - start:.1f} s", flush=True)
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    project = Path(args.project_dir).resolve() if args.project_dir else find_project()
    overrides = [Path(p).resolve() for p in args.configfile]
    try:
        cfg = build_config.load(project, overrides)
        build_config.validate(
            cfg,
            project / "schemas" / "config.schema.yaml",
            source=str(overrides[-1] if overrides else "config/config.yaml"),
        )
    except build_config.ConfigError as exc:
        raise UserError(str(exc)) from None
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(project / "Snakefile"),
           "--directory", str(project), "--profile", str(project / "config" / "profiles" / args.profile)]  # fmt: skip
    if args.cores:
        cmd += ["--cores", str(args.cores)]
    if overrides:
        cmd += ["--configfile", *map(str, overrides)]
    if args.dry_run:
        cmd += ["--dry-run"]
    cmd += args.snakemake_args + args.targets
    env = dict(os.environ)
    # Rule scripts run with the interpreter found on PATH: make it this environment's.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return subprocess.call(cmd, cwd=project, env=env)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="regionbench", description="Build, verify and evaluate region-annotated image benchmarks."
    )
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("synth", help="write a synthetic collection in the SAIAPR TC-12 layout")
    s.add_argument("--profile", choices=sorted(synth.PROFILES), default="demo")
    s.add_argument("--out", required=True, help="folder to write the collection into")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--quirks", action="store_true", help="carry every quirk of the official files")
    s.add_argument("--workers", type=int, default=None, help="parallel folders (default: all cores)")
    s.set_defaults(func=cmd_synth)

    b = sub.add_parser("build", help="run the Snakemake workflow (default target: the whole build)")
    b.add_argument("targets", nargs="*", help="Snakemake targets (files or rule names)")
    b.add_argument("--cores", type=int, default=None, help="cores to use (default: the profile's)")
    b.add_argument("--configfile", action="append", default=[], help="config overriding config/config.yaml")
    b.add_argument("--dry-run", "-n", action="store_true", help="list the jobs without running them")
    b.add_argument("--profile", default="default", help="profile under config/profiles/")
    b.add_argument("--project-dir", default=None, help="workflow checkout (default: found from the current folder)")
    b.add_argument("--snakemake-args", nargs=argparse.REMAINDER, default=[], help="further Snakemake options, verbatim")
    b.set_defaults(func=cmd_build)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (UserError, ValueError, OSError) as exc:
        print(f"regionbench: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""The commands that score: ``evaluate`` (predictions against a release, in one process or as
jobs), ``baselines`` (the reference methods run and scored) and ``conformance`` (the corpus
against the engines)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from regionbench.cli.common import UserError, find_project
from regionbench.core import numbers
from regionbench.core.errors import InputError

JOBS = 4  # evaluate --executor's part jobs when --jobs is not given


def cmd_evaluate(args: argparse.Namespace) -> int:
    import pyarrow as pa

    from regionbench.core import tables
    from regionbench.release import loader
    from regionbench.scoring import tasks

    # A scoring reads the release a range of images at a time: Arrow's default allocator
    # (mimalloc) keeps what each read freed, 8 MiB a range; the system's gives it back.
    pa.set_memory_pool(pa.system_memory_pool())
    if not args.executor and (args.jobs is not None or args.work_dir is not None):
        given_flag = "--jobs" if args.jobs is not None else "--work-dir"
        raise UserError(
            f"{given_flag} belongs to scoring as jobs: add --executor local (or slurm); on one machine "
            "without Snakemake, --cores N scores on N processes"
        )
    given = tasks.settings_from_args(args)
    tasks.settings_of(args.task, **given)  # a setting of another task: one line before the release is read
    said = lambda line: print(line, flush=True)  # noqa: E731
    data = loader.load(args.release, args.rev, verify=not args.no_verify)
    if args.executor:
        from regionbench.scoring import scattering

        scope = tasks.scoped(data, args.task, **given)[1]
        said(scope.line())  # what the jobs score, said before they start
        jobs = args.jobs or JOBS
        if jobs > max(scope.count, 1):  # a job beyond the items would hold none of them
            said(f"--jobs {jobs}: {scope.count} {scope.unit} to score, so {max(scope.count, 1)} jobs")
            jobs = max(scope.count, 1)

        try:
            project: Path | None = find_project()
        except UserError:  # outside a workflow folder: the executor's own defaults
            project = None
        report = scattering.score(
            args.release, args.rev, not args.no_verify, Path(args.predictions), args.task, given, args.by_source,
            args.executor, jobs, args.cores, Path(args.work_dir) if args.work_dir else None, project, said,
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
    from regionbench.io import layouts
    from regionbench.release import loader
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


def cmd_conformance(args: argparse.Namespace) -> int:
    import fnmatch

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


def add_evaluate(sub: argparse._SubParsersAction, tasks_options: bool = True, task: str | None = None) -> None:
    """evaluate: predictions scored; the task options come from the task registry (every task
    module imported: only when the command line is an evaluate, or for the whole parser), those
    of ``task`` (the one the command line names) shown."""
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
        "--jobs",
        type=numbers.argument(int, 1),
        default=None,
        metavar="N",
        help=f"part jobs of --executor (default {JOBS}; at most one an item scored)",
    )
    jobs.add_argument(
        "--work-dir",
        default=None,
        metavar="DIR",
        help="--executor's work folder, seen by every job at the same path (default: a new folder here, removed after)",
    )
    if tasks_options:
        from regionbench.scoring import tasks

        tasks.add_arguments(ev, task)
    ev.set_defaults(func=cmd_evaluate)


def add_conformance(sub: argparse._SubParsersAction) -> None:
    """conformance: the scoring corpus against the engines installed."""
    c = sub.add_parser(
        "conformance",
        help="run the scoring conformance corpus (truths, runs, the reference tools' own figures) against engines",
    )
    c.add_argument("--corpus", metavar="DIR", help="the corpus folder (default: the checkout's conformance/)")
    c.add_argument(
        "--engine", action="append", metavar="NAME",
        help="an engine to check: cityscapesscripts, faster-coco-eval, lvis, panopticapi, pycocotools, regionbench, sam3 "
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
        choices=["instances", "tide", "lvis", "panoptic", "semantic", "segments", "boundaries", "concepts"],  # FAMILIES
        help="only these cases",
    )
    c.add_argument("--case", action="append", metavar="PATTERN", help="only the cases named so (instances/segm/ties-*)")
    c.add_argument("--json", action="store_true", help="every figure as JSON (for CI)")
    c.set_defaults(func=cmd_conformance)


def add_baselines(sub: argparse._SubParsersAction) -> None:
    """baselines: the reference methods on a release."""
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


def cmd_compare(args: argparse.Namespace) -> int:
    from regionbench.scoring import compare

    reports = []
    for path in (args.a, args.b):
        try:
            reports.append(json.loads(Path(path).read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise UserError(f"{path}: not a readable report ({exc}); give two reports evaluate --out wrote") from None
    result = compare.compare(reports[0], reports[1], (Path(args.a).name, Path(args.b).name))
    return printed(compare.render(result), result, args.out, "comparison")


def printed(text: str, result: dict, out: str | None, what: str) -> int:
    """A command's ``text`` printed, and its ``result`` written to ``out`` where given."""
    from regionbench.core import tables

    print(text)
    if out:
        tables.write_json(out, result)
        print(f"{what} written to {out}")
    return 0


def cmd_concepts(args: argparse.Namespace) -> int:
    from regionbench.scoring import concept_files as concepts

    report = concepts.score([Path(p) for p in args.annotations], Path(args.predictions), args.iou_type)
    return printed(concepts.render(report), report, args.out, "report")


def add_concepts(sub: argparse._SubParsersAction) -> None:
    """concepts: a run scored against SA-Co's own files."""
    cc = sub.add_parser(
        "concepts",
        help="score a promptable-concept run (SAM 3's predictions) against SA-Co files: cgF1, pmF1, IL_MCC, one "
        "annotator's file or the oracle over several",
    )
    cc.add_argument(
        "--annotations", nargs="+", required=True, metavar="FILE",
        help="the SA-Co files, one an annotator (gold_<subset>_merged_a_release_test.json ...): several, the oracle",
    )  # fmt: skip
    cc.add_argument("--predictions", required=True, metavar="FILE", help="the run: detections naming pairs by id")
    cc.add_argument("--iou-type", default="segm", choices=["segm", "bbox"], help="masks (segm) or boxes (bbox)")
    cc.add_argument("--out", metavar="JSON", help="write the report here")
    cc.set_defaults(func=cmd_concepts)


def add_compare(sub: argparse._SubParsersAction) -> None:
    """compare: two runs' reports, B - A with paired bootstrap intervals."""
    cp = sub.add_parser(
        "compare",
        help="B - A on each headline measure of two reports of the same release, task and options: the paired "
        "bootstrap interval over images and a p-value",
    )
    cp.add_argument("a", metavar="A.json", help="the first run's report (evaluate --out)")
    cp.add_argument("b", metavar="B.json", help="the second run's report, scored the same way")
    cp.add_argument("--out", metavar="JSON", help="write the comparison here")
    cp.set_defaults(func=cmd_compare)

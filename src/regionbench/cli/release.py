"""The commands that read a release: ``show``, ``view``, ``verify``, ``diff``, ``audit``,
``challenge`` and ``export`` (and its one-format aliases)."""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from typing import TYPE_CHECKING

from regionbench.cli.common import UserError, run_report
from regionbench.core import numbers

if TYPE_CHECKING:
    import http.server


def cmd_show(args: argparse.Namespace) -> int:
    import numpy as np
    from PIL import Image  # the build extra: figures are made where the release is built

    from regionbench.core import geometry
    from regionbench.pipeline import plots
    from regionbench.release import loader

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
    from regionbench.client import view
    from regionbench.release import loader  # thumbnails need Pillow: the build install
    from regionbench.scoring import tasks

    data = loader.load(args.release, verify=not args.no_verify)
    run = run_report(args.run) if args.run else None
    compared = None
    if args.compare:
        if run is None:
            raise UserError("--compare needs --run: the run the other is compared with")
        from regionbench.scoring import compare

        names = (Path(args.run).name, Path(args.compare).name)
        compared = compare.compare(run, run_report(args.compare), names)
    server = _site_server(Path(args.out), args.port) if args.serve else None
    site = view.write_site(data, Path(args.out), args.images, run, predictions=args.predictions, compared=compared)
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
    from regionbench.release import changes, loader

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


def _rescored_run(args: argparse.Namespace) -> None:
    """diff --run: the run scored on both releases, measure by measure."""
    from regionbench.release import loader
    from regionbench.scoring import tasks

    if not args.predictions:
        raise UserError("--run needs --predictions: the file or folder the report scored")
    report = run_report(args.run)
    scored = [tasks.rescore(loader.load(folder), report, Path(args.predictions)) for folder in (args.old, args.new)]
    before, after = (tasks.measures(r) for r in scored)
    print(f"run {args.run} ({report.get('task')}) scored on both:")
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        change = f"{b - a:+.4f}" if a is not None and b is not None else "n/a"
        print(f"  {name:<28} {a if a is None else f'{a:.4f}'} -> {b if b is None else f'{b:.4f}'} ({change})")


def cmd_audit(args: argparse.Namespace) -> int:
    from regionbench.audit import releases
    from regionbench.core import tables
    from regionbench.release import loader

    if args.leaks:
        return _audit_leaks(args)

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


def _audit_leaks(args: argparse.Namespace) -> int:
    """audit --leaks PUBLIC PRIVATE: one line per leak of the hidden truth, exit 1 when any."""
    from regionbench.audit import leaks
    from regionbench.core import tables
    from regionbench.release import loader

    if not args.other:
        raise UserError("audit --leaks: give the public release, then the private release it was made from")
    found = leaks.audit(Path(args.release), loader.load(args.other))
    for line in found:
        print(line)
    print(
        f"{args.release}: {len(found)} leaks of the hidden truth"
        if found
        else f"{args.release}: no value of the hidden truth"
    )
    if args.json:
        tables.write_json(args.json, {"leaks": found})
    return 1 if found else 0


def cmd_challenge(args: argparse.Namespace) -> int:
    from regionbench.challenge import hosting

    said = lambda line: print(line, flush=True)  # noqa: E731
    record = hosting.host(
        Path(args.release), Path(args.out), args.hidden, args.task, Path(args.baselines) if args.baselines else None,
        Path(args.images) if args.images else None, args.docker_image, args.end, args.max_mib, said,
    )  # fmt: skip
    print(
        f"{args.out}: public/ ({record['public']['dataset']} v{record['public']['version']}, digest "
        f"{record['public']['digest'][:12]}), codabench.zip ({', '.join(record['tasks'])} on the hidden "
        f"{record['hidden']} side, scored against digest {record['private']['digest'][:12]})"
    )
    for task, kit in record["starting_kit"].items():
        shown = ", ".join(f"{k} {v:.4f}" for k, v in kit["scores"].items() if not k.endswith(("_low", "_high")))
        print(f"starting kit, {task} ({kit['method']}): {shown}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from regionbench.client import exports
    from regionbench.release import loader

    data = loader.load(args.release)  # verified: a damaged release is one line, not a half-written tree
    images = Path(args.images) if args.images else None
    for line in exports.export(data, Path(args.out), args.format, images, args.annotator):
        print(line)
    return 0


def add_show(sub: argparse._SubParsersAction) -> None:
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


def add_view(sub: argparse._SubParsersAction) -> None:
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
    vw.add_argument(
        "--compare",
        metavar="REPORT",
        help="with --run: another run's report of the same release, task and options; the run page shows B - A "
        "with its paired bootstrap interval and p-value (as regionbench compare)",
    )
    vw.add_argument("--no-verify", action="store_true", help="write the site of a release that does not verify")
    vw.add_argument("--serve", action="store_true", help="then serve the folder at http://127.0.0.1:PORT until Ctrl-C")
    vw.add_argument(
        "--port", type=numbers.argument(int, 1, 65535), default=8000, help="the port of --serve (default 8000)"
    )
    vw.set_defaults(func=cmd_view)


def add_verify(sub: argparse._SubParsersAction) -> None:
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


def add_diff(sub: argparse._SubParsersAction) -> None:
    """diff: two releases."""
    d = sub.add_parser("diff", help="records added, removed and changed between two releases; the bump they need")
    d.add_argument("old", help="the earlier release folder")
    d.add_argument("new", help="the later release folder")
    d.add_argument("--examples", type=numbers.argument(int, 0), default=3, help="keys to show per table and kind")
    d.add_argument("--check", action="store_true", help="exit 1 unless NEW's version is enough of a bump over OLD's")
    d.add_argument("--run", metavar="REPORT", help="an evaluate report (--out): score its run on both releases")
    d.add_argument("--predictions", metavar="PATH", help="with --run: the predictions the report scored")
    d.set_defaults(func=cmd_diff)


def add_audit(sub: argparse._SubParsersAction) -> None:
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
    a.add_argument(
        "--leaks",
        action="store_true",
        help="RELEASE is a public release and OTHER the private one it was made from: name every value of the hidden "
        "truth the public one holds (exit 1 when any)",
    )
    a.set_defaults(func=cmd_audit)


def add_challenge(sub: argparse._SubParsersAction) -> None:
    """challenge: a release made a hosted benchmark."""
    from regionbench.challenge import ENTRIES, MAX_MIB

    c = sub.add_parser(
        "challenge",
        help="a hosted benchmark of a release: a public release without the hidden side's truth, and a Codabench bundle",
    )
    c.add_argument("release", help="the (private) release folder")
    c.add_argument("--out", required=True, metavar="DIR", help="where public/, codabench/ and codabench.zip go")
    c.add_argument("--hidden", metavar="SPLIT", help="the split whose truth is hidden (default: the evaluation split)")
    c.add_argument(
        "--task", nargs="+", metavar="TASK", choices=sorted(ENTRIES),
        help="the tasks hosted (default: those of the release kind's reference methods)",
    )  # fmt: skip
    c.add_argument(
        "--baselines", metavar="DIR",
        help="a regionbench baselines --out folder whose predictions make the starting kit (default: run the method)",
    )  # fmt: skip
    c.add_argument("--images", metavar="ROOT", help="the raw tree, when the release does not embed its images")
    c.add_argument(
        "--docker-image",
        metavar="NAME",
        help="the image the scoring program runs in (default: built from its Dockerfile)",
    )
    c.add_argument("--end", metavar="YYYY-MM-DD", help="the phase's end (default: none, an ever-lasting benchmark)")
    c.add_argument(
        "--max-mib",
        type=numbers.argument(int, 1),
        default=MAX_MIB,
        help=f"a submission's size limit (default {MAX_MIB})",
    )
    c.set_defaults(func=cmd_challenge)


# The commands of one format each, kept as aliases of ``export --format`` for one version.
EXPORT_ALIASES = {"export-saiapr": "saiapr", "export-coco": "coco", "export-imageclef": "imageclef"}


def add_export(sub: argparse._SubParsersAction) -> None:
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
                "mapillary, pascal-context, saco, saiapr or voc (any layout that exports, SA-Co's concept pairs among "
                "them, and ImageCLEF)",
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

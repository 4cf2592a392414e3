# Paths, shard listing and input functions shared by every stage.
from pathlib import Path

from snakemake.exceptions import WorkflowError

from regionbench import release, synth
from regionbench.io import saiapr
from regionbench.provenance import code_version
from regionbench.subsets import SUBSET_SIZES

DATASET = config["dataset"]
RESULTS = f"results/{DATASET}"
LOGS = f"logs/{DATASET}"
RELEASE = f"releases/{DATASET}/v{config['release']['version']}"
GENERATED_RAW = f"resources/raw/{DATASET}"
RAW = config["raw_dir"] or GENERATED_RAW
SUBSETS = list(SUBSET_SIZES)
CODE = code_version()  # passed as a parameter, so library changes rerun the stages


def shards():
    """Folder shards (00, 01, ...) of the raw tree, known before anything runs."""
    if config["raw_dir"]:
        return sorted(
            p.name for p in Path(RAW).iterdir() if p.is_dir() and p.name.isdigit()
        )
    return synth.folders(config["synth"]["profile"])


def local_cores():
    """Every core of a local run. A cluster run has no --cores: its profile sets the threads."""
    try:
        return workflow.cores
    except WorkflowError:
        return 1


def shard_inputs(wildcards):
    """What an ingest job reads, as Snakemake tracks it: the generated tree, or the real tree's
    word list (the shard's own files are tracked by ``shard_state``)."""
    return [GENERATED_RAW] if not config["raw_dir"] else [f"{RAW}/wlist.txt"]


def shard_state(wildcards):
    """A real shard's path, size and mtime fingerprint: any change to its files reruns it."""
    if not config["raw_dir"]:
        return "generated"  # the synth rule's output stands for the whole tree
    return saiapr.folder_state(RAW, wildcards.shard)


def official_features(wildcards):
    """The raw tree's features.txt files, when it has them (the generated tree always does)."""
    if not config["raw_dir"]:
        return [GENERATED_RAW]
    return [str(p) for p in sorted(Path(RAW).glob("*/features.txt"))]


def has_official_features():
    return not config["raw_dir"] or any(Path(RAW).glob("*/features.txt"))


def classifier_outputs(ext):
    """Per (subset, classifier) prediction files (parquet) or fit timings (json)."""
    return [
        f"{RESULTS}/classifiers/{subset}/{name}.{ext}"
        for subset in SUBSETS
        for name in config["classifiers"]["names"]
    ]


def ingest_outputs():
    tables = ("images", "regions", "rejects")
    return [f"{RESULTS}/ingest/{s}/{t}.parquet" for s in shards() for t in tables]


def all_outputs():
    return ingest_outputs() + [
        f"{RESULTS}/ingest/report.json",
        f"{RESULTS}/vocabulary.parquet",
        f"{RESULTS}/branch_stats.parquet",
        f"{RESULTS}/relation_stats.parquet",
        *expand(f"{RESULTS}/features/{{shard}}.parquet", shard=shards()),
        *([f"{RESULTS}/features_parity.json"] if has_official_features() else []),
        f"{RESULTS}/classifiers.parquet",
        f"{RELEASE}/manifest.json",
    ]


def previous_release():
    """The release to diff against: release.previous, else the highest lower version present."""
    if config["release"]["previous"]:
        return config["release"]["previous"]
    current = release.parse_version(config["release"]["version"])
    found = release.release_folders(
        str(p.parent) for p in Path("releases", DATASET).glob("v*/manifest.json")
    )
    lower = [path for version, path in found if version < current]
    return lower[-1] if lower else None


def release_results():
    """Stage reports and figures copied into the release's results/ folder (no timings)."""
    files = {
        name: f"{RESULTS}/{name}"
        for name in (
            "branch_stats.parquet",
            "relation_stats.parquet",
            "subsets.json",
            "vocabulary_procedure.json",
            "classifiers.parquet",
            "metrics.json",
            "classifiers.csv",
            "classifiers.png",
            "classifiers.svg",
        )
    }
    files["ingest_report.json"] = f"{RESULTS}/ingest/report.json"
    if has_official_features():
        files["features_parity.json"] = f"{RESULTS}/features_parity.json"
    return files

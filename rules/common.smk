# Paths, the raw tree, shard listing and input functions shared by every stage.
import json
from pathlib import Path

from snakemake.exceptions import WorkflowError

from regionbench import config as build_config
from regionbench import release, synth, vocabulary
from regionbench.io import coco, imageclef, saiapr
from regionbench.io.shards import IngestError, trees_state
from regionbench.provenance import code_version
from regionbench.subsets import SUBSET_SIZES

DATASET = config["dataset"]
RESULTS = f"results/{DATASET}"
LOGS = f"logs/{DATASET}"
RELEASE = f"releases/{DATASET}/v{config['release']['version']}"
SUBSETS = list(SUBSET_SIZES)
CODE = code_version()  # passed as a parameter, so library changes rerun the stages
DERIVED_VOCABULARY = (
    f"{RESULTS}/categories"  # a COCO tree's vocabulary, from its categories
)
RELEASE_SCHEMAS = str(release.SCHEMA_DIR)


class GeneratedRaw:
    """The synthetic collection that the synth rule writes (no raw_dir configured)."""

    generated = True
    layout = "saiapr"

    def __init__(self, root):
        self.root = root

    def shards(self):
        return synth.folders(config["synth"]["profile"])

    def shard_size(self):
        return None  # a SAIAPR shard is a folder

    def inputs(self, wildcards):
        return [self.root]  # the synth rule's output stands for the whole tree

    def state(self, wildcards):
        return "generated"

    def official_features(self, wildcards):
        return [self.root]

    def has_official_features(self):
        return True

    def official_relations(self, wildcards):
        return [self.root]

    def has_official_relations(self):
        return True

    def several_annotators(self):
        return False


class RealRaw:
    """A SAIAPR TC-12 tree on disk (raw_dir)."""

    generated = False
    layout = "saiapr"

    def __init__(self, root):
        self.root = root

    def shard_size(self):
        return None  # a SAIAPR shard is a folder

    def shards(self):
        """Folder shards (00, 01, ...), known before anything runs."""
        return sorted(
            p.name for p in Path(self.root).iterdir() if p.is_dir() and p.name.isdigit()
        )

    def inputs(self, wildcards):
        """The word list; the shard's own files are tracked by ``state``."""
        return [f"{self.root}/wlist.txt"]

    def state(self, wildcards):
        """The shard's path, size and mtime fingerprint: any change to its files reruns it, and so
        does an image added or removed in another folder (it may share an id with this one).
        """
        if not hasattr(self, "_names"):
            self._names = saiapr.image_names_state(self.root)
        return f"{saiapr.folder_state(self.root, wildcards.shard)}:{self._names}"

    def official_features(self, wildcards):
        return [str(p) for p in sorted(Path(self.root).glob("*/features.txt"))]

    def has_official_features(self):
        return any(Path(self.root).glob("*/features.txt"))

    def official_relations(self, wildcards):
        return [
            str(p) for p in sorted(Path(self.root).glob(f"*/{saiapr.SPATIAL_FOLDER}"))
        ]

    def has_official_relations(self):
        return any(Path(self.root).glob(f"*/{saiapr.SPATIAL_FOLDER}"))

    def several_annotators(self):
        return False  # one annotation per region in the SAIAPR layout


class GeneratedCoco(GeneratedRaw):
    """The synthetic several-annotator collection in the COCO layout (synth.layout: coco)."""

    layout = "coco"

    def shard_size(self):
        images = synth.get_profile(config["synth"]["profile"]).n_images
        return SHARD_SIZE or coco.default_shard_size(images)

    def shards(self):
        images = synth.get_profile(config["synth"]["profile"]).n_images
        return [f"{k:02d}" for k in range(-(-images // self.shard_size()))]

    def official_features(self, wildcards):
        return []

    def has_official_features(self):
        return False

    def has_official_relations(self):
        return False

    def several_annotators(self):
        return SYNTH_ANNOTATORS > 1


class RealCoco(RealRaw):
    """Annotation-tool exports on disk: images/ and annotations/<annotator>.json."""

    layout = "coco"

    def shards(self):
        # Counting reads every annotation file: once per parse, not once per rule that asks.
        if not hasattr(self, "_shards"):
            self._size, count = coco.shard_plan(self.root, SHARD_SIZE)
            self._shards = [f"{k:02d}" for k in range(count)]
        return self._shards

    def shard_size(self):
        self.shards()
        return self._size

    def inputs(self, wildcards):
        return [str(p) for p in coco.annotators(self.root).values()]

    def state(self, wildcards):
        return coco.tree_state(self.root)

    def official_features(self, wildcards):
        return []

    def has_official_features(self):
        return False

    def has_official_relations(self):
        return False

    def several_annotators(self):
        return len(coco.annotators(self.root)) > 1


def raw_tree():
    """The one place that decides where the raw tree comes from and in which layout."""
    try:
        build_config.check_raw_dir(config)
        build_config.check_vocabulary_dir(config)
    except build_config.ConfigError as exc:
        raise WorkflowError(str(exc)) from None
    if not config["raw_dir"]:
        root = f"resources/raw/{DATASET}"
        coco_layout = config["synth"].get("layout", "saiapr") == "coco"
        return GeneratedCoco(root) if coco_layout else GeneratedRaw(root)
    try:
        layout = config.get("layout") or coco.detect_layout(config["raw_dir"])
    except IngestError as exc:
        raise WorkflowError(str(exc)) from None
    return (
        RealCoco(config["raw_dir"]) if layout == "coco" else RealRaw(config["raw_dir"])
    )


SHARD_SIZE = config["ingest"].get(
    "shard_size"
)  # COCO; None: io.coco.default_shard_size
SYNTH_ANNOTATORS = config["synth"].get(
    "annotators", 3
)  # of a generated COCO collection
RAW = raw_tree()
# The vocabulary folder: the config's; else a COCO tree's own categories (rule categories); else
# the library's SAIAPR vocabulary, which the generated collections are drawn from.
VOCABULARY = config.get("vocabulary_dir") or (
    DERIVED_VOCABULARY
    if RAW.layout == "coco" and not RAW.generated
    else str(vocabulary.DEFAULT_DIR)
)


def shards():
    return RAW.shards()


def image_label_source():
    """The raw tree's ImageCLEF folder, an image-level annotation source, or "" without one."""
    folder = Path(RAW.root, imageclef.FOLDER)
    return str(folder) if not RAW.generated and folder.is_dir() else ""


def image_label_state():
    """Fingerprint of the ImageCLEF files: an edit reruns the image_labels rule."""
    if not (folder := image_label_source()):
        return "none"
    return trees_state(folder, (".",))


def local_cores():
    """Every core of a local run. A cluster run has no --cores: its profile sets the threads."""
    try:
        return workflow.cores
    except WorkflowError:
        return 1


def classifying():
    """Whether the reference classifiers run: switched on in the config, and subsets A-H exist
    (a label-free collection has none: the subsets checkpoint's report says why). For input
    functions only: before the checkpoint has run, Snakemake waits for it."""
    if not config["classifiers"]["enabled"]:
        return False
    subsets_report = Path(checkpoints.subsets.get().output.report)
    return "skipped" not in json.loads(subsets_report.read_text())


def classifier_outputs(ext):
    """Per (subset, classifier) prediction files (parquet) or fit timings (json)."""
    return [
        f"{RESULTS}/classifiers/{subset}/{name}.{ext}"
        for subset in SUBSETS
        for name in config["classifiers"]["names"]
    ]


def metric_outputs():
    """The DVC metrics: one flat file per (subset, classifier), named as classifiers.metrics names them."""
    return [
        f"{RESULTS}/metrics/{subset}-{name}.json"
        for subset in SUBSETS
        for name in config["classifiers"]["names"]
    ]


def ingest_outputs():
    tables = ("images", "regions", "rejects")
    return [f"{RESULTS}/ingest/{s}/{t}.parquet" for s in shards() for t in tables]


def all_outputs(wildcards=None):
    return ingest_outputs() + [
        f"{RESULTS}/ingest/report.json",
        f"{RESULTS}/vocabulary.parquet",
        f"{RESULTS}/branch_stats.parquet",
        f"{RESULTS}/relation_stats.parquet",
        *expand(f"{RESULTS}/features/{{shard}}.parquet", shard=shards()),
        *([f"{RESULTS}/features_parity.json"] if RAW.has_official_features() else []),
        *([f"{RESULTS}/relations_parity.json"] if RAW.has_official_relations() else []),
        *([f"{RESULTS}/classifiers.parquet"] if classifying() else []),
        f"{RESULTS}/release.json",
    ]


CLASSIFIER_RESULTS = (
    "classifiers.parquet",
    "classifiers.csv",
    "classifiers.png",
    "classifiers.svg",
    "soft_confusions.json",
)


def forget_stale_receipt():
    """Remove the release job's receipt when the folder it stands for is gone or is not the one
    it records (its manifest's digest differs): the release job then runs again. Checked on
    every invocation, as Snakemake cannot see a folder that is not an output."""
    receipt = Path(RESULTS, "release.json")
    if not receipt.is_file():
        return
    manifest = Path(RELEASE, "manifest.json")
    try:
        digest = json.loads(manifest.read_text(encoding="utf-8")).get("digest")
        recorded = json.loads(receipt.read_text(encoding="utf-8")).get("digest")
    except (OSError, ValueError, AttributeError):
        digest, recorded = None, False
    if digest != recorded:
        receipt.unlink()


forget_stale_receipt()


def release_results(wildcards=None):
    """Stage reports and figures copied into the release's results/ folder (no timings); the
    classifiers' only when they run (``classifying``)."""
    files = {
        name: f"{RESULTS}/{name}"
        for name in (
            "branch_stats.parquet",
            "relation_stats.parquet",
            "relation_stats.png",
            "relation_stats.svg",
            "subsets.json",
            "vocabulary_procedure.json",
            *(CLASSIFIER_RESULTS if classifying() else ()),
            "collection.json",
            "collection.png",
            "collection.svg",
            "agreement.json",
        )
    }
    files["ingest_report.json"] = f"{RESULTS}/ingest/report.json"
    files["image_labels.json"] = f"{RESULTS}/image_labels.json"
    if RAW.has_official_features():
        files["features_parity.json"] = f"{RESULTS}/features_parity.json"
    if RAW.has_official_relations():
        files["relations_parity.json"] = f"{RESULTS}/relations_parity.json"
    if RAW.several_annotators():
        files |= {
            name: f"{RESULTS}/{name}" for name in ("agreement.png", "agreement.svg")
        }
    return files

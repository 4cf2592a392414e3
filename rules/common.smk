# Paths, the raw tree, shard listing and input functions shared by every stage.
import hashlib
import json
from pathlib import Path

from snakemake.exceptions import WorkflowError

from regionbench import baselines, release
from regionbench.core.errors import InputError
from regionbench.io import layouts
from regionbench.io.rawtree import RawTree
from regionbench.pipeline import config as build_config
from regionbench.pipeline import jobs, progress
from regionbench.pipeline import vocabulary
from regionbench.pipeline.provenance import code_version
from regionbench.pipeline.subsets import SUBSET_SIZES
from regionbench import synthetic
from regionbench.synthetic import plans

DATASET = config["dataset"]
RESULTS = f"results/{DATASET}"
LOGS = f"logs/{DATASET}"
RELEASE = f"releases/{DATASET}/v{config['release']['version']}"
SUBSETS = list(SUBSET_SIZES)
CODE = code_version()  # passed as a parameter, so library changes rerun the stages
DERIVED_VOCABULARY = (
    f"{RESULTS}/categories"  # a real tree's vocabulary, from its own categories
)
RELEASE_SCHEMAS = str(release.SCHEMA_DIR)
ASSEMBLED = (
    f"{RESULTS}/assembled"  # the release's tables before its results (rule assemble)
)
BASELINES_DIR = f"{RESULTS}/baselines"
PIECES = f"{RESULTS}/pieces"  # a prepared tree's shard pieces (rule prepare)


DUPLICATE_AUDIT = config["audit"]["duplicates"]["enabled"]
DUPLICATE_GROUPS = (
    [f"{RESULTS}/audit/duplicate_groups.parquet"] if DUPLICATE_AUDIT else []
)
LABEL_AUDIT = config["audit"]["labels"]["enabled"]
LABEL_AUDIT_TABLE = [f"{RESULTS}/audit/labels.parquet"] if LABEL_AUDIT else []
SHARD_SIZE = config["ingest"]["shard_size"]  # None: the layout's default
SYNTH_ANNOTATORS = config["synth"]["annotators"]  # of a generated collection


def raw_tree():
    """The configured raw tree (checked, its layout detected), or the generated one."""
    try:
        build_config.check_vocabulary_dir(config)
        layout = build_config.raw_layout(config)
        if layout is not None:
            return RawTree(config["raw_dir"], layout, SHARD_SIZE)
        profile = plans.get_profile(config["synth"]["profile"])
        return RawTree(
            f"resources/raw/{DATASET}",
            layouts.get(config["synth"]["layout"]),
            SHARD_SIZE,
            planned=(profile.n_images, profile.folders),
            annotators=synthetic.writers()[config["synth"]["layout"]].annotators(
                SYNTH_ANNOTATORS
            ),
        )
    except InputError as exc:
        raise WorkflowError(str(exc)) from None


RAW = raw_tree()
# The reference methods the baselines job scores, those configured or else those of the
# release's kind (regionbench.baselines.chosen; the names were checked with the config).
BASELINES = baselines.chosen(config["baselines"]["methods"], RAW.layout.about.baselines)


def script_path(script):
    return Path(workflow.basedir, "scripts", script)


def code_of(script):
    """A light stage's code parameter: the library's version and its script's digest (a
    ``script:`` job's script is Snakemake's own code trigger; a ``run:`` block's is not).
    """
    digest = hashlib.sha256(script_path(script).read_bytes()).hexdigest()[:12]
    return f"{CODE} {script} {digest}"


def here(script, input, output, params, log, threads=1, wildcards=None):
    """Run ``scripts/<script>`` in this process (a light stage's ``run:``): it reads its input,
    output, params, log, threads and wildcards as a ``script:`` job does
    (regionbench.pipeline.jobs.in_process).
    """
    jobs.in_process(
        script_path(script),
        input=input._plainstrings(),
        output=output._plainstrings(),
        params=params,
        log=log._plainstrings(),
        threads=threads,
        wildcards=wildcards,
        config=config,
    )


# What Snakemake's ``script:`` directive passes its ``script`` function, in order (snakemake.parser.Script).
SCRIPT_ARGUMENTS = (
    "basedir input output params wildcards threads resources log config rule conda_env conda_base_path "
    "container_img singularity_args env_modules bench_record jobid bench_iteration cleanup_scripts "
    "shadow_dir sourcecache_path runtime_sourcecache_path runtime_paths"
).split()


def heavy(script, job):
    """Run a heavy stage's ``scripts/<script>`` (its ``run:``, given ``locals()``, the job's
    arguments as Snakemake passes them): in its own interpreter, as a ``script:`` job runs it
    (Snakemake's own ``script``, given what that directive passes), or in this process where
    the config says ``jobs.in_process`` (``here``).
    """
    if config["jobs"]["in_process"]:
        here(
            script,
            job["input"],
            job["output"],
            job["params"],
            job["log"],
            job["threads"],
            job["wildcards"],
        )
        return
    from snakemake.script import script as fresh

    given = {**job, "config": config}  # the config is the workflow's, not the job's
    fresh(str(script_path(script)), *(given[name] for name in SCRIPT_ARGUMENTS))


def raw_inputs(wildcards):
    return RAW.inputs()


def category_inputs(wildcards):
    return RAW.category_files()


def raw_state(wildcards):
    return RAW.state(wildcards.shard)


def shard_pieces(wildcards):
    """A prepared tree's pieces of the shard, once rule prepare (a checkpoint) has run. Its
    index is an ancient input, for the order alone: a shard reruns when its own pieces change,
    and prepare rewrites only those."""
    if not RAW.prepares:
        return []
    index = checkpoints.prepare.get().output.index
    return [ancient(index)] + [
        f"{PIECES}/{wildcards.shard}/{name}" for name in RAW.pieces
    ]


INGEST_SETTINGS = {
    "ingest": config["ingest"],
    "category_map": config["category_map"],
    "relations": config["relations"],
    "agreement": config["agreement"],
}
# The vocabulary folder: the config's; else the tree's own categories when its layout names
# them (rule categories) and it is real or generated with its format's classes; else the
# library's SAIAPR vocabulary, which the other generated collections are drawn from.
VOCABULARY = config["vocabulary_dir"] or (
    DERIVED_VOCABULARY
    if isinstance(RAW.layout, layouts.NamesCategories)
    and (not RAW.generated or synthetic.own_categories(RAW.layout.name))
    else str(vocabulary.DEFAULT_DIR)
)
# What the synthetic scenes are drawn from: the vocabulary, unless the writer draws its format's
# own classes (then the build's vocabulary comes from the generated tree: no cycle).
SYNTH_VOCABULARY = (
    str(vocabulary.DEFAULT_DIR)
    if RAW.generated and synthetic.own_categories(RAW.layout.name)
    else VOCABULARY
)


def shards():
    return RAW.shards


def agreement_tables(suffix=""):
    """Every shard's agreement table (``.pixels``, ``.labels``: its other two); none with one
    annotator, where no agreement job runs: there is nothing to compare."""
    if not RAW.several_annotators:
        return []
    return expand(f"{RESULTS}/agreement/{{shard}}{suffix}.parquet", shard=shards())


def local_cores():
    """Every core of a local run. A cluster run has no --cores: its profile sets the threads."""
    try:
        return workflow.cores
    except WorkflowError:
        return 1


def classifiers_wanted():
    """The config's classifiers.enabled; auto: the layout's recipe (the SAIAPR grid where it is the
    recipe's own layout, not where a collection brings its own benchmark)."""
    enabled = config["classifiers"]["enabled"]
    return RAW.layout.about.classifiers if enabled == "auto" else enabled


# The stages the subsets checkpoint will not add, for the build's forecast (its logger, in this
# process, reads them as it plans): the classifiers where the config or the layout does not want them.
progress.never_join(
    () if classifiers_wanted() else ("classify", "evaluate_classifiers")
)


def classifying():
    """Whether the reference classifiers run: switched on in the config, and subsets A-H exist
    (a label-free collection has none: the subsets checkpoint's report says why). For input
    functions only: before the checkpoint has run, Snakemake waits for it."""
    if not classifiers_wanted():
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
        *([f"{RESULTS}/features_parity.json"] if RAW.official("features") else []),
        *([f"{RESULTS}/relations_parity.json"] if RAW.official("relations") else []),
        f"{RESULTS}/release.json",
        *([f"{RESULTS}/challenge.json"] if config["challenge"]["enabled"] else []),
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


def classifier_results(wildcards=None):
    """The classifiers' reports in the release, when they run (``classifying``): the only
    results that wait for the subsets checkpoint. Asked for by input functions of their own,
    since one that waits keeps all of its files out of the first plan (the build's progress then
    knows most jobs from the start)."""
    return (
        {name: f"{RESULTS}/{name}" for name in CLASSIFIER_RESULTS}
        if classifying()
        else {}
    )


def release_results(wildcards=None, classifiers=True):
    """Stage reports and figures copied into the release's results/ folder (no timings); the
    classifiers' only when they run. Without ``classifiers``, those the first plan knows.
    """
    files = {
        name: f"{RESULTS}/{name}"
        for name in (
            "branch_stats.parquet",
            "relation_stats.parquet",
            "relation_stats.png",
            "relation_stats.svg",
            "subsets.json",
            "vocabulary_procedure.json",
        )
    }
    files |= classifier_results() if classifiers else {}
    files |= {
        name: f"{RESULTS}/{name}"
        for name in (
            "collection.json",
            "collection.png",
            "collection.svg",
            "agreement.json",
        )
    }
    files["ingest_report.json"] = f"{RESULTS}/ingest/report.json"
    if DUPLICATE_AUDIT:
        files["audit_duplicates.json"] = f"{RESULTS}/audit_duplicates.json"
    if LABEL_AUDIT:
        files["audit_labels.json"] = f"{RESULTS}/audit_labels.json"
    files["image_labels.json"] = f"{RESULTS}/image_labels.json"
    if RAW.official("features"):
        files["features_parity.json"] = f"{RESULTS}/features_parity.json"
    if RAW.official("relations"):
        files["relations_parity.json"] = f"{RESULTS}/relations_parity.json"
    if RAW.several_annotators:
        files |= {
            name: f"{RESULTS}/{name}" for name in ("agreement.png", "agreement.svg")
        }
    if RAW.several_annotators and RAW.layout.about.baselines != "segmentation":
        # the humans' ceiling on the release's concepts ((image, phrase) pairs), for the card and
        # the site; not where humans segment without labels (BSDS500): there are no concepts
        files["concepts.json"] = f"{RESULTS}/concepts.json"
    return files

# regionbench: a raw tree of images and region masks (any layout of regionbench.io) -> a versioned benchmark release.
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version

from regionbench.pipeline import config as build_config

min_version("9.0")


configfile: "config/config.yaml"


# The validation regionbench build runs too: one line per problem, every schema default filled in.
try:
    build_config.validate(
        config, Path(workflow.basedir, "schemas", "config.schema.yaml")
    )
except build_config.ConfigError as exc:
    raise WorkflowError(str(exc)) from None


include: "rules/common.smk"


wildcard_constraints:
    shard=r"\d+",
    subset="[A-H]",
    classifier="[a-z]+",


# The light stages run in this process, on a cluster too (rules/common.smk: here).
localrules:
    source,
    categories,
    source_categories,
    ingest_report,
    image_labels,
    vocabulary,
    agreement_summary,
    agreement_figure,
    relation_stats,
    collection_stats,
    features_parity,
    relations_parity,
    near_duplicates,
    subsets,
    evaluate_classifiers,


include: "rules/synth.smk"
include: "rules/ingest.smk"
include: "rules/vocabulary.smk"
include: "rules/features.smk"
include: "rules/agreement.smk"
include: "rules/audit.smk"
include: "rules/classifiers.smk"
include: "rules/baselines.smk"
include: "rules/collection.smk"
include: "rules/release.smk"


rule all:
    default_target: True
    input:
        all_outputs,
        lambda wildcards: list(classifier_results().values()),

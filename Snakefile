# regionbench: raw SAIAPR-layout images and masks -> a versioned benchmark release.
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config/config.yaml"


validate(config, "schemas/config.schema.yaml")


include: "rules/common.smk"


wildcard_constraints:
    shard=r"\d+",
    subset="[A-H]",
    classifier="[a-z]+",


include: "rules/synth.smk"
include: "rules/ingest.smk"
include: "rules/vocabulary.smk"
include: "rules/features.smk"
include: "rules/agreement.smk"
include: "rules/classifiers.smk"
include: "rules/collection.smk"
include: "rules/release.smk"


rule all:
    default_target: True
    input:
        all_outputs,

# Subsets A-H with their split, one job per (subset, classifier), and the evaluation.


rule subsets:
    input:
        expand(f"{RESULTS}/ingest/{{shard}}/regions.parquet", shard=shards()),
    output:
        subsets=f"{RESULTS}/subsets.parquet",
        report=f"{RESULTS}/subsets.json",
    log:
        f"{LOGS}/subsets.log",
    benchmark:
        f"{LOGS}/benchmarks/subsets.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        code=CODE,
        seed=config["subsets"]["seed"],
        split_unit=config["subsets"]["split_unit"],
        reference_annotator=config.get("reference_annotator"),
    script:
        "../scripts/subsets.py"


rule classify:
    input:
        subsets=f"{RESULTS}/subsets.parquet",
        features=expand(f"{RESULTS}/features/{{shard}}.parquet", shard=shards()),
    output:
        predictions=f"{RESULTS}/classifiers/{{subset}}/{{classifier}}.parquet",
        timing=f"{RESULTS}/classifiers/{{subset}}/{{classifier}}.json",
    log:
        f"{LOGS}/classifiers/{{subset}}/{{classifier}}.log",
    benchmark:
        f"{LOGS}/benchmarks/classifiers/{{subset}}/{{classifier}}.tsv"
    resources:
        mem_mb=3000,
        runtime=60,
    params:
        code=CODE,
        seed=config["classifiers"]["seed"],
        params=lambda wildcards: config["classifiers"]["params"].get(
            wildcards.classifier, {}
        ),
    script:
        "../scripts/classify.py"


rule evaluate_classifiers:
    input:
        predictions=classifier_outputs("parquet"),
        timings=classifier_outputs("json"),
        subsets=f"{RESULTS}/subsets.json",
        hierarchy=f"{VOCABULARY}/hierarchy.yaml",
    output:
        table=f"{RESULTS}/classifiers.parquet",
        metrics=metric_outputs(),
        plot=f"{RESULTS}/classifiers.csv",
        png=f"{RESULTS}/classifiers.png",
        svg=f"{RESULTS}/classifiers.svg",
        timings=f"{RESULTS}/classifier_timings.json",
        soft=f"{RESULTS}/soft_confusions.json",
    log:
        f"{LOGS}/evaluate_classifiers.log",
    benchmark:
        f"{LOGS}/benchmarks/evaluate_classifiers.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        code=CODE,
    script:
        "../scripts/evaluate_classifiers.py"

# Subsets A-H with their split, one job per classifier (all subsets), and the evaluation.


# A checkpoint: whether the classifiers run depends on the labels found (common.classifying).
checkpoint subsets:
    input:
        ingested=f"{RESULTS}/ingest/report.json",  # stops here when ingest accepted nothing
        regions=expand(f"{RESULTS}/ingest/{{shard}}/regions.parquet", shard=shards()),
        images=expand(f"{RESULTS}/ingest/{{shard}}/images.parquet", shard=shards()),
        duplicate_groups=DUPLICATE_GROUPS,  # kept on one side of the split
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
        code=code_of("subsets.py"),
        seed=config["subsets"]["seed"],
        split_unit=config["subsets"]["split_unit"],
        split=config["subsets"]["split"],
        test_split=config["subsets"]["test_split"],
        evaluation_splits=list(RAW.layout.about.evaluation_splits),
        crowd=config["subsets"]["crowd"],
        reference_annotator=config["reference_annotator"],
    run:
        here("subsets.py", input, output, params, log)


rule classify:
    input:
        subsets=f"{RESULTS}/subsets.parquet",
        features=expand(f"{RESULTS}/features/{{shard}}.parquet", shard=shards()),
    output:
        # One job per classifier fits it on every subset in one process: the grid's 72 fits
        # would otherwise pay the interpreter and library start-up 72 times.
        predictions=expand(
            f"{RESULTS}/classifiers/{{subset}}/{{{{classifier}}}}.parquet",
            subset=SUBSETS,
        ),
        timings=expand(
            f"{RESULTS}/classifiers/{{subset}}/{{{{classifier}}}}.json", subset=SUBSETS
        ),
    log:
        f"{LOGS}/classify/{{classifier}}.log",
    benchmark:
        f"{LOGS}/benchmarks/classify/{{classifier}}.tsv"
    resources:
        mem_mb=3000,
        runtime=120,
    params:
        code=code_of("classify.py"),
        seed=config["classifiers"]["seed"],
        max_train=config["classifiers"]["max_train"],
        subsets=SUBSETS,
        params=lambda wildcards: config["classifiers"]["params"].get(
            wildcards.classifier, {}
        ),
    run:
        heavy("classify.py", locals())


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
        code=code_of("evaluate_classifiers.py"),
        max_train=config["classifiers"]["max_train"],
    run:
        here("evaluate_classifiers.py", input, output, params, log)

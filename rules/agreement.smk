# Agreement between the annotators of each image, one job per shard, and its summary.


rule agreement:
    input:
        ingested=f"{RESULTS}/ingest/report.json",  # stops here when ingest accepted nothing
        images=f"{RESULTS}/ingest/{{shard}}/images.parquet",
        regions=f"{RESULTS}/ingest/{{shard}}/regions.parquet",
        coverage=f"{RESULTS}/ingest/{{shard}}/coverage.parquet",
        hierarchy=f"{VOCABULARY}/hierarchy.yaml",
        registry=f"{VOCABULARY}/label_ids.tsv",
    output:
        pairs=f"{RESULTS}/agreement/{{shard}}.parquet",
        pixels=f"{RESULTS}/agreement/{{shard}}.pixels.parquet",
        labels=f"{RESULTS}/agreement/{{shard}}.labels.parquet",
    log:
        f"{LOGS}/agreement/{{shard}}.log",
    benchmark:
        f"{LOGS}/benchmarks/agreement/{{shard}}.tsv"
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        code=code_of("agreement.py"),
        min_iou=config["agreement"]["min_iou"],
    run:
        heavy("agreement.py", locals())


rule agreement_summary:
    input:
        ingested=f"{RESULTS}/ingest/report.json",  # with one annotator no agreement job stops it
        pairs=agreement_tables(),
        pixels=agreement_tables(".pixels"),
        labels=agreement_tables(".labels"),
        coverage=expand(f"{RESULTS}/ingest/{{shard}}/coverage.parquet", shard=shards()),
    output:
        f"{RESULTS}/agreement.json",
    log:
        f"{LOGS}/agreement_summary.log",
    benchmark:
        f"{LOGS}/benchmarks/agreement_summary.tsv"
    resources:
        mem_mb=3000,
        runtime=10,
    params:
        code=code_of("agreement_summary.py"),
        min_iou=config["agreement"]["min_iou"],
        consensus=config["agreement"]["consensus"],
    run:
        here("agreement_summary.py", input, output, params, log)


rule agreement_figure:
    input:
        f"{RESULTS}/agreement.json",
    output:
        png=f"{RESULTS}/agreement.png",
        svg=f"{RESULTS}/agreement.svg",
    log:
        f"{LOGS}/agreement_figure.log",
    benchmark:
        f"{LOGS}/benchmarks/agreement_figure.tsv"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        code=code_of("agreement_figure.py"),
    run:
        here("agreement_figure.py", input, output, params, log)

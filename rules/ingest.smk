# Raw SAIAPR folders -> images, regions and rejects tables, one job per folder shard.


rule ingest:
    input:
        RAW.inputs,
    output:
        images=f"{RESULTS}/ingest/{{shard}}/images.parquet",
        regions=f"{RESULTS}/ingest/{{shard}}/regions.parquet",
        rejects=f"{RESULTS}/ingest/{{shard}}/rejects.parquet",
        report=f"{RESULTS}/ingest/{{shard}}/report.json",
    log:
        f"{LOGS}/ingest/{{shard}}.log",
    benchmark:
        f"{LOGS}/benchmarks/ingest/{{shard}}.tsv"
    resources:
        mem_mb=1000,
        runtime=30,
    params:
        code=CODE,
        state=RAW.state,
        root=RAW.root,
        strict=config["ingest"]["strict"],
        max_image_pixels=config["ingest"]["max_image_pixels"],
    script:
        "../scripts/ingest.py"


rule ingest_report:
    input:
        expand(f"{RESULTS}/ingest/{{shard}}/report.json", shard=shards()),
    output:
        f"{RESULTS}/ingest/report.json",
    log:
        f"{LOGS}/ingest/report.log",
    benchmark:
        f"{LOGS}/benchmarks/ingest_report.tsv"
    resources:
        mem_mb=500,
        runtime=5,
    params:
        code=CODE,
    script:
        "../scripts/ingest_report.py"

# Summaries of the region features (saiapr27) and spatial relations that each ingest job
# measures on the pixels and masks it decodes (rules/ingest.smk).


rule relation_stats:
    input:
        ingested=f"{RESULTS}/ingest/report.json",  # stops here when ingest accepted nothing
        relations=expand(f"{RESULTS}/relations/{{shard}}.parquet", shard=shards()),
    output:
        table=f"{RESULTS}/relation_stats.parquet",
        png=f"{RESULTS}/relation_stats.png",
        svg=f"{RESULTS}/relation_stats.svg",
    log:
        f"{LOGS}/relation_stats.log",
    benchmark:
        f"{LOGS}/benchmarks/relation_stats.tsv"
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code=code_of("relation_stats.py"),
    run:
        here("relation_stats.py", input, output, params, log)


rule features_parity:
    input:
        ingested=f"{RESULTS}/ingest/report.json",  # stops here when ingest accepted nothing
        features=expand(f"{RESULTS}/features/{{shard}}.parquet", shard=shards()),
        regions=expand(f"{RESULTS}/ingest/{{shard}}/regions.parquet", shard=shards()),
        raw=lambda wildcards: RAW.official("features"),
    output:
        f"{RESULTS}/features_parity.json",
    log:
        f"{LOGS}/features_parity.log",
    benchmark:
        f"{LOGS}/benchmarks/features_parity.tsv"
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code=code_of("features_parity.py"),
        layout=RAW.layout.name,
    run:
        here("features_parity.py", input, output, params, log)


rule relations_parity:
    input:
        ingested=f"{RESULTS}/ingest/report.json",  # stops here when ingest accepted nothing
        relations=expand(f"{RESULTS}/relations/{{shard}}.parquet", shard=shards()),
        raw=lambda wildcards: RAW.official("relations"),
    output:
        f"{RESULTS}/relations_parity.json",
    log:
        f"{LOGS}/relations_parity.log",
    benchmark:
        f"{LOGS}/benchmarks/relations_parity.tsv"
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code=code_of("relations_parity.py"),
        root=RAW.root,
        layout=RAW.layout.name,
    run:
        here("relations_parity.py", input, output, params, log)

# Region features (saiapr27) and spatial relations, one job per folder shard, plus summaries.


rule features:
    input:
        images=f"{RESULTS}/ingest/{{shard}}/images.parquet",
        regions=f"{RESULTS}/ingest/{{shard}}/regions.parquet",
    output:
        f"{RESULTS}/features/{{shard}}.parquet",
    log:
        f"{LOGS}/features/{{shard}}.log",
    benchmark:
        f"{LOGS}/benchmarks/features/{{shard}}.tsv"
    resources:
        mem_mb=1500,
        runtime=30,
    params:
        code=CODE,
        root=RAW.root,
    script:
        "../scripts/features.py"


rule relations:
    input:
        images=f"{RESULTS}/ingest/{{shard}}/images.parquet",
        regions=f"{RESULTS}/ingest/{{shard}}/regions.parquet",
    output:
        f"{RESULTS}/relations/{{shard}}.parquet",
    log:
        f"{LOGS}/relations/{{shard}}.log",
    benchmark:
        f"{LOGS}/benchmarks/relations/{{shard}}.tsv"
    resources:
        mem_mb=1000,
        runtime=30,
    params:
        code=CODE,
        tau=config["relations"]["tau"],
        adjacency_px=config["relations"]["adjacency_px"],
    script:
        "../scripts/relations.py"


rule relation_stats:
    input:
        expand(f"{RESULTS}/relations/{{shard}}.parquet", shard=shards()),
    output:
        f"{RESULTS}/relation_stats.parquet",
    log:
        f"{LOGS}/relation_stats.log",
    benchmark:
        f"{LOGS}/benchmarks/relation_stats.tsv"
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code=CODE,
    script:
        "../scripts/relation_stats.py"


rule features_parity:
    input:
        features=expand(f"{RESULTS}/features/{{shard}}.parquet", shard=shards()),
        raw=RAW.official_features,
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
        code=CODE,
    script:
        "../scripts/features_parity.py"


rule relations_parity:
    input:
        relations=expand(f"{RESULTS}/relations/{{shard}}.parquet", shard=shards()),
        raw=RAW.official_relations,
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
        code=CODE,
        root=RAW.root,
    script:
        "../scripts/relations_parity.py"

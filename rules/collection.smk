# The collection's statistics (the paper's section 3.4 and Fig. 6) and its label frequencies.


rule collection_stats:
    input:
        images=expand(f"{RESULTS}/ingest/{{shard}}/images.parquet", shard=shards()),
        regions=expand(f"{RESULTS}/ingest/{{shard}}/regions.parquet", shard=shards()),
        vocabulary=f"{RESULTS}/vocabulary.parquet",
        subsets=f"{RESULTS}/subsets.parquet",
        report=f"{RESULTS}/subsets.json",
    output:
        stats=f"{RESULTS}/collection.json",
        png=f"{RESULTS}/collection.png",
        svg=f"{RESULTS}/collection.svg",
    log:
        f"{LOGS}/collection_stats.log",
    benchmark:
        f"{LOGS}/benchmarks/collection_stats.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        code=code_of("collection_stats.py"),
    run:
        here("collection_stats.py", input, output, params, log)

# Audits before publishing: near-duplicate images (their groups keep subsets' splits whole).


rule near_duplicates:
    input:
        ingested=f"{RESULTS}/ingest/report.json",  # stops here when ingest accepted nothing
        images=expand(f"{RESULTS}/ingest/{{shard}}/images.parquet", shard=shards()),
    output:
        groups=f"{RESULTS}/audit/duplicate_groups.parquet",
        report=f"{RESULTS}/audit_duplicates.json",
    log:
        f"{LOGS}/near_duplicates.log",
    benchmark:
        f"{LOGS}/benchmarks/near_duplicates.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        code=CODE,
        threshold=config["audit"]["duplicates"]["threshold"],
    script:
        "../scripts/near_duplicates.py"

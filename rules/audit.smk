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
        code=code_of("near_duplicates.py"),
        threshold=config["audit"]["duplicates"]["threshold"],
    run:
        here("near_duplicates.py", input, output, params, log)


rule audit_labels:
    input:
        subsets=f"{RESULTS}/subsets.parquet",
        report=f"{RESULTS}/subsets.json",
        features=expand(f"{RESULTS}/features/{{shard}}.parquet", shard=shards()),
        # the other annotators' masks, when there are others
        regions=(
            expand(f"{RESULTS}/ingest/{{shard}}/regions.parquet", shard=shards())
            if RAW.several_annotators
            else []
        ),
        coverage=(
            expand(f"{RESULTS}/ingest/{{shard}}/coverage.parquet", shard=shards())
            if RAW.several_annotators
            else []
        ),
    output:
        table=f"{RESULTS}/audit/labels.parquet",
        report=f"{RESULTS}/audit_labels.json",
    log:
        f"{LOGS}/audit_labels.log",
    benchmark:
        f"{LOGS}/benchmarks/audit_labels.tsv"
    resources:
        mem_mb=3000,
        runtime=30,
    params:
        code=code_of("audit_labels.py"),
        folds=config["audit"]["labels"]["folds"],
        seed=config["audit"]["labels"]["seed"],
        max_train=config["audit"]["labels"]["max_train"],
    run:
        heavy("audit_labels.py", locals())

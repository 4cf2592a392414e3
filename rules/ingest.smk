# A raw tree of any layout, shard by shard -> images, regions and rejects tables, one job per shard;
# the same job measures the features and relations while the pixels and masks are decoded.


# A layout whose files each hold every shard's items (COCO) is read once into shard pieces; the
# shards are known before (runs of the image files), the pieces only once this job has run.
checkpoint prepare:
    input:
        raw_inputs,
    output:
        index=f"{PIECES}/index.json",
    log:
        f"{LOGS}/prepare.log",
    benchmark:
        f"{LOGS}/benchmarks/prepare.tsv"
    resources:
        mem_mb=1000,
        runtime=60,
    params:
        code=code_of("prepare.py"),
        names=lambda wildcards: RAW.listing_state,
        root=RAW.root,
        layout=RAW.layout.name,
        shard_size=SHARD_SIZE,
    run:
        heavy("prepare.py", locals())


rule ingest:
    input:
        raw=lambda wildcards: [] if RAW.prepares else RAW.inputs(),
        pieces=shard_pieces,
        registry=f"{VOCABULARY}/label_ids.tsv",
        hierarchy=f"{VOCABULARY}/hierarchy.yaml",
    output:
        images=f"{RESULTS}/ingest/{{shard}}/images.parquet",
        regions=f"{RESULTS}/ingest/{{shard}}/regions.parquet",
        rejects=f"{RESULTS}/ingest/{{shard}}/rejects.parquet",
        report=f"{RESULTS}/ingest/{{shard}}/report.json",
        features=f"{RESULTS}/features/{{shard}}.parquet",
        relations=f"{RESULTS}/relations/{{shard}}.parquet",
        coverage=f"{RESULTS}/ingest/{{shard}}/coverage.parquet",
    log:
        f"{LOGS}/ingest/{{shard}}.log",
    benchmark:
        f"{LOGS}/benchmarks/ingest/{{shard}}.tsv"
    resources:
        mem_mb=1000,
        runtime=30,
    params:
        code=code_of("ingest.py"),
        state=raw_state,
        root=RAW.root,
        layout=RAW.layout.name,
        settings=INGEST_SETTINGS,
        pieces=PIECES if RAW.prepares else "",
        # one image under two ids: the shard's image files that hold an earlier one's bytes
        copies=lambda wildcards: RAW.copies.get(wildcards.shard, {}),
    run:
        heavy("ingest.py", locals())


rule ingest_report:
    input:
        reports=expand(f"{RESULTS}/ingest/{{shard}}/report.json", shard=shards()),
        rejects=expand(f"{RESULTS}/ingest/{{shard}}/rejects.parquet", shard=shards()),
    output:
        f"{RESULTS}/ingest/report.json",
    log:
        f"{LOGS}/ingest_report.log",
    benchmark:
        f"{LOGS}/benchmarks/ingest_report.tsv"
    resources:
        mem_mb=500,
        runtime=5,
    params:
        code=code_of("ingest_report.py"),
        rejects=f"{RESULTS}/ingest/*/rejects.parquet",
    run:
        here("ingest_report.py", input, output, params, log)


rule image_labels:
    input:
        ingested=f"{RESULTS}/ingest/report.json",  # stops here when ingest accepted nothing
        images=expand(f"{RESULTS}/ingest/{{shard}}/images.parquet", shard=shards()),
        registry=f"{VOCABULARY}/label_ids.tsv",
    output:
        labels=f"{RESULTS}/image_labels.parquet",
        rejects=f"{RESULTS}/image_labels.rejects.parquet",
        report=f"{RESULTS}/image_labels.json",
    log:
        f"{LOGS}/image_labels.log",
    benchmark:
        f"{LOGS}/benchmarks/image_labels.tsv"
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code=code_of("image_labels.py"),
        folder=RAW.image_label_source,
        state=lambda wildcards: RAW.image_label_state(),
        strict=config["ingest"]["strict"],
    run:
        here("image_labels.py", input, output, params, log)

# The versioned release: every table, the stage reports, Croissant, the dataset card, the manifest.


# What the collection is: its name, home page, citation and the licence of its images.
rule source:
    input:
        raw_inputs,
    output:
        f"{RESULTS}/source.json",
    log:
        f"{LOGS}/source.log",
    benchmark:
        f"{LOGS}/benchmarks/source.tsv"
    resources:
        mem_mb=1000,  # the annotations are streamed
        runtime=10,
    params:
        code=code_of("source.py"),
        root=RAW.root,
        layout=RAW.layout.name,
        generated=RAW.generated,
        configured=config["source"],
        license=config["release"]["license"],
    run:
        here("source.py", input, output, params, log)


rule assemble:
    input:
        images=expand(f"{RESULTS}/ingest/{{shard}}/images.parquet", shard=shards()),
        regions=expand(f"{RESULTS}/ingest/{{shard}}/regions.parquet", shard=shards()),
        rejects=expand(f"{RESULTS}/ingest/{{shard}}/rejects.parquet", shard=shards())
        + [f"{RESULTS}/image_labels.rejects.parquet"],
        image_labels=f"{RESULTS}/image_labels.parquet",
        features=expand(f"{RESULTS}/features/{{shard}}.parquet", shard=shards()),
        relations=expand(f"{RESULTS}/relations/{{shard}}.parquet", shard=shards()),
        agreement=agreement_tables(),
        coverage=expand(f"{RESULTS}/ingest/{{shard}}/coverage.parquet", shard=shards()),
        vocabulary=f"{RESULTS}/vocabulary.parquet",
        source_categories=f"{RESULTS}/source_categories.parquet",
        source=f"{RESULTS}/source.json",
        subsets=f"{RESULTS}/subsets.parquet",
        duplicate_groups=DUPLICATE_GROUPS,
        label_audit=LABEL_AUDIT_TABLE,
        schemas=expand(f"{RELEASE_SCHEMAS}/{{table}}.schema.json", table=release.TABLES),
    output:
        # The release's checked tables, sealed so that they open as a release: what the
        # baselines score before the release is published with their reports (rule release).
        directory(ASSEMBLED),
    log:
        f"{LOGS}/assemble.log",
    benchmark:
        f"{LOGS}/benchmarks/assemble.tsv"
    # It checks its tables and writes its Hugging Face files on every core it is given.
    threads: local_cores()
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        code=code_of("assemble.py"),
        dataset=DATASET,
        root=RAW.root,
        synthetic=RAW.generated,
        layout=RAW.layout.name,
        version=config["release"]["version"],
        license=config["release"]["license"],
        date=config["release"]["date"],
        creator=config["release"]["creator"],
        images=config["release"]["images"],
        statements=config["release"]["statements"],
        drawn_by=config["drawn_by"],
        test_split=config["subsets"]["test_split"],
        evaluation_splits=list(RAW.layout.about.evaluation_splits),
        config_sha256=release.config_hash(config),
        previous=config["release"]["previous"],
        folder=RELEASE,
    run:
        heavy("assemble.py", locals())


rule concept_ceiling:
    input:
        assembled=ASSEMBLED,
    output:
        f"{RESULTS}/concepts.json",
    log:
        f"{LOGS}/concept_ceiling.log",
    benchmark:
        f"{LOGS}/benchmarks/concept_ceiling.tsv"
    resources:
        mem_mb=2000,  # one annotator's masks of the evaluation side at a time, and the pairs
        runtime=30,
    params:
        code=code_of("concept_ceiling.py"),
    run:
        heavy("concept_ceiling.py", locals())


rule release:
    input:
        assembled=ASSEMBLED,
        baselines=[BASELINES_DIR] if BASELINES else [],
        # Apart (see classifier_results): the fixed results' jobs belong in the first plan.
        results=lambda wildcards: list(release_results(classifiers=False).values()),
        classifier_results=lambda wildcards: list(classifier_results().values()),
    output:
        # A receipt stands for the folder: Snakemake removes a job's outputs before it runs, and a
        # published version must survive a rebuild that is refused. The script stages the
        # folder and moves it into place only once it is whole.
        f"{RESULTS}/release.json",
    log:
        f"{LOGS}/release.log",
    benchmark:
        f"{LOGS}/benchmarks/release.tsv"
    # It hashes the release's files on every core it is given.
    threads: local_cores()
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        code=code_of("release.py"),
        dataset=DATASET,
        version=config["release"]["version"],
        results=release_results,
        folder=RELEASE,
    run:
        heavy("release.py", locals())


rule challenge:
    input:
        release=f"{RESULTS}/release.json",
        # the build's reference methods' predictions make the starting kit where it ran them
        baselines=[BASELINES_DIR] if BASELINES else [],
    output:
        f"{RESULTS}/challenge.json",
    log:
        f"{LOGS}/challenge.log",
    benchmark:
        f"{LOGS}/benchmarks/challenge.tsv"
    threads: local_cores()
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        code=code_of("challenge.py"),
        release=RELEASE,
        out=f"challenges/{DATASET}/v{config['release']['version']}",
        root=RAW.root,
        settings=config["challenge"],
    run:
        heavy("challenge.py", locals())

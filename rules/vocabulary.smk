# Candidate lists + captions + annotations -> the vocabulary with stable ids, and branch statistics.


# A real tree whose layout names categories, without vocabulary_dir: the vocabulary from them.
rule categories:
    input:
        category_inputs,
    output:
        multiext(
            f"{DERIVED_VOCABULARY}/",
            "hierarchy.yaml",
            "label_ids.tsv",
            "h_list.txt",
            "t_list.txt",
            "curation.yaml",
            "category_names.tsv",
        ),
    log:
        f"{LOGS}/categories.log",
    benchmark:
        f"{LOGS}/benchmarks/categories.tsv"
    resources:
        mem_mb=1000,  # the annotations are streamed
        runtime=10,
    params:
        code=code_of("categories.py"),
        root=RAW.root,
        layout=RAW.layout.name,
        out=lambda wildcards, output: str(Path(output[0]).parent),
    run:
        here("categories.py", input, output, params, log)


rule vocabulary:
    input:
        ingested=f"{RESULTS}/ingest/report.json",  # stops here when ingest accepted nothing
        images=expand(f"{RESULTS}/ingest/{{shard}}/images.parquet", shard=shards()),
        regions=expand(f"{RESULTS}/ingest/{{shard}}/regions.parquet", shard=shards()),
        lists=multiext(f"{VOCABULARY}/", "h_list.txt", "t_list.txt"),
        curation=f"{VOCABULARY}/curation.yaml",
        hierarchy=f"{VOCABULARY}/hierarchy.yaml",
        registry=f"{VOCABULARY}/label_ids.tsv",
    output:
        vocabulary=f"{RESULTS}/vocabulary.parquet",
        branches=f"{RESULTS}/branch_stats.parquet",
        procedure=f"{RESULTS}/vocabulary_procedure.json",
    log:
        f"{LOGS}/vocabulary.log",
    benchmark:
        f"{LOGS}/benchmarks/vocabulary.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        code=code_of("vocabulary.py"),
        config_dir=lambda wildcards, input: str(Path(input.hierarchy).parent),
    run:
        here("vocabulary.py", input, output, params, log)


# The categories each annotator's file names, as it names them: an export writes them back.
rule source_categories:
    input:
        category_inputs,
        registry=f"{VOCABULARY}/label_ids.tsv",
    output:
        f"{RESULTS}/source_categories.parquet",
    log:
        f"{LOGS}/source_categories.log",
    benchmark:
        f"{LOGS}/benchmarks/source_categories.tsv"
    resources:
        mem_mb=1000,  # the annotations are streamed
        runtime=10,
    params:
        code=code_of("source_categories.py"),
        root=RAW.root,
        layout=RAW.layout.name,
        category_map=config["category_map"],
    run:
        here("source_categories.py", input, output, params, log)

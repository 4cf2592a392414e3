# The synthetic raw collection, generated when no real raw_dir is configured.


if RAW.generated:

    rule synth:
        input:
            # The scenes are drawn from the vocabulary: editing it regenerates the collection.
            hierarchy=f"{SYNTH_VOCABULARY}/hierarchy.yaml",
            registry=f"{SYNTH_VOCABULARY}/label_ids.tsv",
        output:
            directory(RAW.root),
        log:
            f"{LOGS}/synth.log",
        benchmark:
            f"{LOGS}/benchmarks/synth.tsv"
        threads: local_cores()
        resources:
            mem_mb=2000,
            runtime=60,
        params:
            code=CODE,
            profile=config["synth"]["profile"],
            seed=config["synth"]["seed"],
            quirks=config["synth"]["quirks"],
            layout=RAW.layout.name,
            annotators=SYNTH_ANNOTATORS,
            disagreement=config["synth"]["disagreement"],
            vocabulary=lambda wildcards, input: str(Path(input.hierarchy).parent),
        script:
            "../scripts/synth.py"

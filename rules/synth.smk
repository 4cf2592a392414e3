# The synthetic raw collection, generated when no real raw_dir is configured.


if not config["raw_dir"]:

    rule synth:
        output:
            directory(GENERATED_RAW),
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
        script:
            "../scripts/synth.py"

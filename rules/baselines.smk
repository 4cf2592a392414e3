# The reference methods of the release's kind, scored through the evaluate door on the assembled release.


rule baselines:
    input:
        assembled=ASSEMBLED,
    output:
        # One folder a method: its predictions and its report per task (only the reports are released).
        directory(BASELINES_DIR),
    log:
        f"{LOGS}/baselines.log",
    benchmark:
        f"{LOGS}/benchmarks/baselines.tsv"
    threads: local_cores()
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        code=code_of("baselines.py"),
        methods=BASELINES,
        root=RAW.root,
    run:
        heavy("baselines.py", locals())

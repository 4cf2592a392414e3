"""Rule image_labels: the raw tree's ImageCLEF files (if any) -> image-level labels and rejects."""

from pathlib import Path

import pyarrow.parquet as pq

from regionbench.core import tables
from regionbench.io import imageclef
from regionbench.pipeline import vocabulary
from regionbench.pipeline.jobs import fail, log_to

log = log_to(snakemake.log[0])
params, out = snakemake.params, snakemake.output
rows, rejects, report = [], [], {}
if params.folder:
    image_ids = [
        i
        for path in snakemake.input.images
        for i in pq.read_table(path, columns=["image_id"]).column("image_id").to_pylist()
    ]
    try:
        rows, rejects, report = imageclef.ingest_judgments(
            params.folder, vocabulary.Registry.read(snakemake.input.registry).ids(), image_ids
        )
    except imageclef.ImageClefError as exc:
        fail(f"image labels failed: {exc}")
    if params.strict and rejects:
        fail(
            "image labels failed (strict mode):\n"
            + "\n".join(f"{r['source']}: {r['key']}: {r['reason']}" for r in rejects)
        )
tables.write_parquet(tables.from_rows(rows, tables.IMAGE_LABELS, tables.KEYS["image_labels"]), out.labels)
tables.write_parquet(tables.from_rows(rejects, tables.REJECTS, tables.KEYS["rejects"]), out.rejects)
tables.write_json(out.report, {"source": Path(params.folder).name if params.folder else None, "annotators": report})
log.info("%d image labels, %d rejected", len(rows), len(rejects))

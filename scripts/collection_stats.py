"""Rule collection_stats: the collection's figures over the reference annotator, and the figure."""

import json
from pathlib import Path

from regionbench.core import tables
from regionbench.pipeline import collection, plots
from regionbench.pipeline.jobs import log_to

log = log_to(snakemake.log[0])
inputs = snakemake.input
images = tables.concat([tables.read_parquet(p, ["image_id", "width", "height"]) for p in inputs.images])
columns = ["image_id", "annotator", "label", "area_px"]
regions = tables.concat([tables.read_parquet(p, columns) for p in inputs.regions])
vocabulary = tables.read_parquet(inputs.vocabulary, ["label", "is_leaf"])
annotator = json.loads(Path(inputs.report).read_text())["reference_annotator"]
stats = collection.statistics(images, regions, vocabulary, annotator)
train = collection.train_label_frequency(
    tables.read_parquet(inputs.subsets, ["subset", "image_id", "label", "image_split"])
)
tables.write_json(snakemake.output.stats, {"annotator": annotator, **stats, "train_label_frequency": train})
plots.label_frequency_figure(stats["label_histogram"], train, snakemake.output.png, snakemake.output.svg)
log.info(
    "%d regions by %s over %d images: %.2f per image, coverage %.4f, %d labels (%d leaves)",
    stats["regions"],
    annotator,
    stats["images"],
    stats["regions_per_image"],
    stats["coverage"],
    stats["labels_used"],
    stats["leaves_used"],
)

"""Rule source_categories: the categories the raw tree's files name, as they name them."""

from regionbench.core import tables
from regionbench.core.errors import InputError
from regionbench.pipeline import vocabulary
from regionbench.pipeline.jobs import fail, log_to

log = log_to(snakemake.log[0])
params = snakemake.params
try:
    # a category maps to a label of the vocabulary table, never to a reserved word
    words = vocabulary.Registry.read(snakemake.input.registry).active_ids()
    table = vocabulary.source_categories(params.layout, params.root, words, params.category_map)
except InputError as exc:
    fail(f"source_categories: {exc}")
tables.write_parquet(table, snakemake.output[0])
log.info("%d source categories", table.num_rows)

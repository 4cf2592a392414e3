"""Rule release: stage outputs -> releases/<dataset>/v<version>/ (checked against the previous one)."""

import logging
import sys
from pathlib import Path

from regionbench import release, tables

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
inp, params = snakemake.input, snakemake.params


def gather(paths: list[str]):
    return tables.concat([tables.read_parquet(p) for p in paths])


data = {
    "images": gather(inp.images),
    "rejects": gather(inp.rejects),
    "relations": gather(inp.relations),
    "vocabulary": tables.read_parquet(inp.vocabulary),
    "subsets": tables.read_parquet(inp.subsets),
}
data["regions"] = release.regions_table(gather(inp.regions), gather(inp.features), data["subsets"])
provenance = release.Provenance(
    dataset=params.dataset,
    version=params.settings["release"]["version"],
    license=params.settings["release"]["license"],
    code_version=params.code,
    config_sha256=release.config_hash(params.settings),
    inputs_sha256=release.fingerprint_tree(Path(params.root)),
)
previous = Path(params.previous) if params.previous else None
logging.info("release %s v%s, previous: %s", params.dataset, provenance.version, previous or "none")
try:
    manifest = release.write_release(
        Path(snakemake.output[0]).parent,
        data,
        {k: Path(v) for k, v in params.results.items()},
        provenance,
        previous=previous,
    )
except release.ReleaseError as exc:
    logging.error("%s", exc)
    sys.exit(f"release refused: {exc}")
for name, entry in manifest["tables"].items():
    logging.info("%s: %d rows, content %s", name, entry["rows"], entry["content_sha256"][:16])

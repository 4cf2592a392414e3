"""The Responsible-AI fields of croissant.json on the releases the farm builds: filled from the
release's own tables and the config's release.statements, valid for mlcroissant, the same words
on the card."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from conftest import PROJECT

from regionbench.release import rai

SCHEMA = PROJECT / "schemas" / "config.schema.yaml"
# The venues' minimal RAI set (NeurIPS datasets track): each must be filled on every release.
REQUIRED = (
    "rai:dataCollection",
    "rai:dataCollectionType",
    "rai:dataAnnotationProtocol",
    "rai:dataPreprocessingProtocol",
    "rai:dataBiases",
    "rai:dataLimitations",
    "rai:dataUseCases",
    "rai:personalSensitiveInformation",
    "rai:dataReleaseMaintenancePlan",
)
BUILDS = ("demo", "coco-distributed", "bsds-humans", "tiny-audits-off", "coco-exports")


def statement_keys() -> dict:
    schema = yaml.safe_load(SCHEMA.read_text())
    return schema["properties"]["release"]["properties"]["statements"]["properties"]


def traced(source: str, folder: Path, manifest: dict) -> bool:
    """Whether a statement's source is a file of the release, a manifest key, or a config key."""
    if source.startswith("config release.statements."):
        return source.rsplit(".", 1)[1] in statement_keys()
    if source.startswith("manifest.json "):
        return source.split(" ", 1)[1] in manifest
    return (folder / source).is_file()


@pytest.fixture(scope="module", params=BUILDS)
def built(request: pytest.FixtureRequest, release) -> tuple[Path, dict, dict]:
    folder = release(request.param).folder
    manifest = json.loads((folder / "manifest.json").read_text())
    return folder, manifest, json.loads((folder / "croissant.json").read_text())


def test_every_rai_field_is_filled_valid_and_traced(built: tuple[Path, dict, dict]) -> None:
    import mlcroissant as mlc

    folder, manifest, document = built
    dataset = mlc.Dataset(jsonld=str(folder / "croissant.json"))
    assert not dataset.metadata.ctx.issues.errors and not dataset.metadata.ctx.issues.warnings
    for field in REQUIRED:
        value = document.get(field)
        values = value if isinstance(value, list) else [value]
        assert values and all(isinstance(v, str) and v.strip() for v in values), (field, value)
    said = rai.statements(folder, manifest)
    assert {s.field for s in said} >= set(REQUIRED)
    for statement in said:
        assert statement.texts and statement.sources, statement
        assert all(traced(s, folder, manifest) for s in statement.sources), statement
        assert as_list(document[statement.field]) == as_list(statement.value)  # one value: a string


def as_list(value: str | list[str]) -> list[str]:
    """A Croissant field's values (JSON-LD writes a field of one value as that value)."""
    return value if isinstance(value, list) else [value]


def test_the_card_says_what_croissant_says(built: tuple[Path, dict, dict]) -> None:
    folder, manifest, _ = built
    card = (folder / "README.md").read_text()
    section = card[card.index("## Responsible use") :]
    for statement in rai.statements(folder, manifest):
        assert f"- **{statement.field}** (" in section
        for text in statement.texts:
            assert f"  {html.escape(text, quote=False)}\n" in section, (statement.field, text)


def test_the_figures_are_the_tables_own(built: tuple[Path, dict, dict]) -> None:
    """The counts the statements give are those of the release's tables and reports."""
    folder, manifest, document = built
    regions = pq.read_table(folder / "data" / "regions.parquet", columns=["annotator"]).to_pylist()
    annotation = " ".join(document["rai:dataAnnotationProtocol"])
    for name in {r["annotator"] for r in regions} - {"consensus"}:
        n = sum(r["annotator"] == name for r in regions)
        assert f"{name}: {n:,} region" in annotation
    rejects = pq.read_table(folder / "data" / "rejects.parquet").num_rows
    preprocessing = " ".join(document["rai:dataPreprocessingProtocol"])
    assert (
        (f"Rejected: {rejects:,} raw item" in preprocessing) if rejects else "No raw item was rejected" in preprocessing
    )
    agreement = json.loads((folder / "results" / "agreement.json").read_text())
    if "matched_share" in agreement:
        assert f"{100 * agreement['matched_share']:.1f} % of regions matched" in annotation
        assert f"mean IoU {agreement['mean_iou']:.3f}" in annotation
    lineage = as_list(document["prov:wasDerivedFrom"])
    assert document["prov:wasGeneratedBy"] == f"regionbench {manifest['code_version']}"
    assert lineage[0] == f"urn:sha256:{manifest['inputs_sha256']}"  # the raw collection, always
    assert (manifest["source"].get("homepage") in lineage) == (
        not manifest["synthetic"] and bool(manifest["source"].get("homepage"))
    )


def test_the_maintainer_s_statements_are_carried_word_for_word(release) -> None:
    """coco-exports' config states personal information and how the images were gathered."""
    built = release("coco-exports")
    config = yaml.safe_load((PROJECT / "tests" / "configs" / "coco-exports.yaml").read_text())
    said = config["release"]["statements"]
    document = json.loads((built.folder / "croissant.json").read_text())
    assert document["rai:personalSensitiveInformation"] == said["personal_sensitive_information"]
    assert document["rai:dataCollection"].endswith(said["data_collection"])

"""The SAIAPR TC-12 layout (docs/inputs.md), read and written in one package.

- ``text``: the text files (word list, label rows, ontology paths, ``features.txt`` and its
  parity with computed features, captions), one parser and one formatter each, one encoding rule;
- ``ingest``: a folder shard read into images with their regions, and rejects;
- ``layout``: the layout (``LAYOUT``) that ``regionbench.io.layouts`` finds;
- ``ontology``: the label hierarchy rebuilt from ``ontology_path.txt``;
- ``spatial``: the official spatial relations (``spatial_rels/<image>.mat``), read for parity;
- ``writer``: the layout writer; ``synthetic`` (generated collections) and ``export``
  (releases) both write through it.
"""

from regionbench.core.hierarchy import majority_parent
from regionbench.io.saiapr.export import export_release
from regionbench.io.saiapr.ingest import ANNOTATOR, FolderReader, folder_state, image_names_state
from regionbench.io.saiapr.layout import SaiaprLayout
from regionbench.io.saiapr.ontology import hierarchy_from_saiapr
from regionbench.io.saiapr.spatial import FOLDER as SPATIAL_FOLDER
from regionbench.io.saiapr.spatial import read_spatial_relations
from regionbench.io.saiapr.text import (
    LayoutError,
    features_parity,
    num2str,
    num2str_tolerance,
    parse_caption,
    parse_ontology_path,
    read_official_features,
    read_wordlist,
)

LAYOUT = SaiaprLayout()

__all__ = [
    "ANNOTATOR",
    "LAYOUT",
    "SPATIAL_FOLDER",
    "FolderReader",
    "LayoutError",
    "export_release",
    "features_parity",
    "folder_state",
    "hierarchy_from_saiapr",
    "image_names_state",
    "majority_parent",
    "num2str",
    "num2str_tolerance",
    "parse_caption",
    "parse_ontology_path",
    "read_official_features",
    "read_spatial_relations",
    "read_wordlist",
]

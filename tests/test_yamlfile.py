"""The one reader of the project's YAML files: the values of PyYAML's pure-Python safe loader,
and every broken file (config, hierarchy, curation) one line naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.core import yamlfile
from regionbench.core.errors import InputError
from regionbench.core.hierarchy import Hierarchy, HierarchyError
from regionbench.pipeline.config import ConfigError, read_yaml
from regionbench.pipeline.vocabulary import DEFAULT_DIR, Curation, VocabularyError

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
)
KEYS = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=10)
DOCUMENTS = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4), max_leaves=20
)


@settings(max_examples=300, deadline=None)
@given(DOCUMENTS, st.sampled_from([{}, {"default_flow_style": True}, {"allow_unicode": True}]))
def test_any_document_reads_as_the_pure_python_loader_reads_it(document: object, style: dict) -> None:
    text = yaml.safe_dump(document, **style)
    assert yamlfile.parse(text) == yaml.load(text, Loader=yaml.SafeLoader)


def test_the_shipped_files_read_as_the_pure_python_loader_reads_them() -> None:
    for path in sorted(Path(DEFAULT_DIR).glob("*.yaml")):
        assert yamlfile.parse(path.read_text(encoding="utf-8")) == yaml.load(path.read_text(), Loader=yaml.SafeLoader)


@pytest.mark.parametrize(
    ("read", "error"),
    [
        (read_yaml, ConfigError),
        (Hierarchy.from_yaml, HierarchyError),
        (Curation.from_yaml, VocabularyError),
    ],
)
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b"root: entity\nnodes: [\n  - {name: a\n", r"bad.yaml:\d+: invalid YAML \(.*\); fix the syntax$"),
        (b"root: a\nroot: b\n", r"bad.yaml: line 2: key 'root' given twice in one mapping; keep one$"),
        (b"root: caf\xe9\n", r"bad.yaml: not UTF-8 text \(byte 9\); save the .* as UTF-8$"),
        (b"\x00", r"bad.yaml: invalid YAML \(.*\); fix the syntax$"),
    ],
)
def test_every_broken_yaml_file_is_one_line(
    tmp_path: Path, read: object, error: type[InputError], text: bytes, expected: str
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(text)
    with pytest.raises(error, match=expected) as info:
        read(bad)
    assert "\n" not in str(info.value)


def test_an_unreadable_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(HierarchyError, match=r"missing.yaml: cannot read the hierarchy \(No such file"):
        Hierarchy.from_yaml(tmp_path / "missing.yaml")

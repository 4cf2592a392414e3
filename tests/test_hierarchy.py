from pathlib import Path

import pytest

from regionbench.hierarchy import Hierarchy, HierarchyError

PROJECT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tree() -> Hierarchy:
    return Hierarchy.from_yaml(PROJECT / "config" / "vocabulary" / "hierarchy.yaml")


def test_six_branches_under_entity(tree: Hierarchy) -> None:
    assert tree.root == "entity"
    assert sorted(tree.children["entity"]) == sorted(
        ["animal", "landscape-nature", "man-made", "humans", "food", "other"]
    )


def test_depths_start_at_zero(tree: Hierarchy) -> None:
    assert tree.depth("entity") == 0
    assert tree.depth("food") == 1
    assert tree.depth("dish") == 2
    assert tree.path("sky-blue") == ["entity", "landscape-nature", "sky", "sky-blue"]
    assert tree.is_ancestor("sky", "sky-blue") and not tree.is_ancestor("sky-blue", "sky")
    assert tree.branch("lamp") == "man-made"


def test_group_flags_and_relations(tree: Hierarchy) -> None:
    assert tree.nodes["group-of-persons"].group
    assert tree.nodes["trunk"].relation == "part-of"
    assert not tree.nodes["man"].group


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        ("- {name: a, parent: nowhere}", "unknown parent"),
        ("- {name: a, parent: entity}\n  - {name: a, parent: entity}", "duplicate name"),
        ("- {name: a, parent: b}\n  - {name: b, parent: a}", "cycle"),
        ("- {name: a, parent: entity, relation: sibling-of}", "relation"),
    ],
)
def test_bad_definitions_fail_with_one_line(tmp_path: Path, nodes: str, message: str) -> None:
    path = tmp_path / "h.yaml"
    path.write_text(f"root: entity\nnodes:\n  {nodes}\n")
    with pytest.raises(HierarchyError, match=message) as err:
        Hierarchy.from_yaml(path)
    assert "\n" not in str(err.value)

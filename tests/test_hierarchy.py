from pathlib import Path

import pytest

from regionbench.core.hierarchy import Hierarchy, HierarchyError
from regionbench.io.saiapr import hierarchy_from_saiapr
from regionbench.pipeline.vocabulary import DEFAULT_DIR

PROJECT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tree() -> Hierarchy:
    return Hierarchy.from_yaml(DEFAULT_DIR / "hierarchy.yaml")


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


def test_e_hierarchy_values(tree: Hierarchy) -> None:
    assert tree.e_hierarchy("food", "dish") == 0.5
    assert tree.e_hierarchy("dish", "food") == 0.5
    assert tree.e_hierarchy("dish", "dish") == 0.0
    assert tree.e_hierarchy("dish", "man") == 1.0  # different branches
    assert tree.e_hierarchy("sky", "sky-blue") == pytest.approx(1 / 3)  # depths 2 and 3
    assert tree.e_hierarchy("landscape-nature", "sky-blue") == pytest.approx(2 / 3)
    assert tree.e_hierarchy("sky-blue", "cloud") == 1.0  # siblings share no path


@pytest.mark.parametrize(
    ("correct", "predicted", "value"),
    [
        ("tree", "trees", 1 / 4),
        ("person", "child", 1 / 3),
        ("food", "dish", 1 / 2),
        ("child-boy", "child", 1 / 4),
        ("sky", "sky-light", 1 / 3),
        ("vegetation", "bush", 1 / 2),
    ],
)
def test_the_papers_table_6(tree: Hierarchy, correct: str, predicted: str, value: float) -> None:
    """Paper 001, Table 6: soft-correct predictions and their e_hierarchy (printed to two digits)."""
    assert tree.e_hierarchy(correct, predicted) == pytest.approx(value)


def test_the_paper_profile_annotates_with_200_leaves(tree: Hierarchy) -> None:
    """Paper 001, section 3.4: 255 labels used, 200 of them leaves of the hierarchy."""
    from regionbench.synthetic.plans import paper_label_order

    used = paper_label_order()
    assert len(used) == 255
    assert sum(1 for label in used if not tree.children.get(label)) == 200


def test_e_hierarchy_directions_and_threshold(tree: Hierarchy) -> None:
    # p below t is "specific", p above t is "general".
    assert tree.e_hierarchy("sky", "sky-blue", direction="specific") == pytest.approx(1 / 3)
    assert tree.e_hierarchy("sky", "sky-blue", direction="general") == 1.0
    assert tree.e_hierarchy("sky-blue", "sky", direction="general") == pytest.approx(1 / 3)
    assert tree.e_hierarchy("sky-blue", "sky", direction="specific") == 1.0
    assert tree.e_hierarchy("sky-blue", "sky-blue", direction="specific") == 0.0
    assert tree.e_hierarchy("landscape-nature", "sky-blue", threshold=0.5) == 1.0
    assert tree.e_hierarchy("sky", "sky-blue", threshold=0.5) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="direction"):
        tree.e_hierarchy("sky", "sky", direction="sideways")


def test_e_hierarchy_vectorised_equals_scalar(tree: Hierarchy) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    labels = tree.labels
    true = [labels[i] for i in rng.integers(len(labels), size=3000)]
    # Half the predictions are relatives of the true label so every case is exercised.
    pred = [
        (tree.ancestors(t) + tree.descendants(t) + [t])[rng.integers(len(tree.ancestors(t)) + 1)]
        if k % 2
        else labels[i]
        for k, (t, i) in enumerate(zip(true, rng.integers(len(labels), size=3000), strict=True))
    ]
    for direction in ("any", "specific", "general"):
        for threshold in (None, 0.4):
            vec = tree.e_hierarchy(true, pred, direction, threshold)
            scalar = [tree.e_hierarchy(t, p, direction, threshold) for t, p in zip(true[:400], pred[:400], strict=True)]
            np.testing.assert_allclose(vec[:400], scalar)
            assert ((vec >= 0) & (vec <= 1)).all()
    assert (tree.e_hierarchy(true, pred) < 1).mean() > 0.3


def test_e_hierarchy_unknown_label(tree: Hierarchy) -> None:
    with pytest.raises(HierarchyError, match="'unicorn'"):
        tree.e_hierarchy(["man", "unicorn"], ["man", "man"])


def _text_only_copy(root: Path, dest: Path) -> Path:
    import shutil

    dest.mkdir()
    shutil.copy(root / "wlist.txt", dest / "wlist.txt")
    for path in root.glob("*/ontology_path.txt"):
        (dest / path.parent.name).mkdir()
        shutil.copy(path, dest / path.parent.name / path.name)
    return dest


def test_from_saiapr_rebuilds_the_generator_tree(tree: Hierarchy, demo_quirks: Path, tmp_path: Path) -> None:
    rebuilt = hierarchy_from_saiapr(_text_only_copy(demo_quirks, tmp_path / "text"))
    assert rebuilt.root == "entity"
    for name, node in rebuilt.nodes.items():
        assert node.parent == tree.nodes[name].parent, name
        assert node.group == tree.nodes[name].group, name
    conflicts = {c.node: c for c in rebuilt.conflicts}
    assert set(conflicts) == {"lamp", "trees"}
    assert conflicts["lamp"].chosen == "furniture" and "generic-objects" in conflicts["lamp"].parents
    assert conflicts["trees"].chosen == "vegetation" and "landscape-nature" in conflicts["trees"].parents
    assert rebuilt.notes["bare_entity_path"] > 0 and rebuilt.notes["doubled_arrow"] > 0
    assert rebuilt.counts["sky-blue"] > 0
    text = rebuilt.render()
    assert "CONFLICT: parents furniture" in text and "# bare_entity_path:" in text


def test_from_saiapr_needs_ontology_rows(tmp_path: Path) -> None:
    (tmp_path / "wlist.txt").write_text("1\tn.a.\n")
    with pytest.raises(HierarchyError, match=r"no ontology_path\.txt rows"):
        hierarchy_from_saiapr(tmp_path)


def test_hierarchy_cli(demo_quirks: Path, capsys: pytest.CaptureFixture) -> None:
    from regionbench import cli

    assert cli.main(["hierarchy", "ehier", "food", "dish", "man", "--yaml", str(DEFAULT_DIR / "hierarchy.yaml")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["e_hierarchy(food, dish) = 0.5000  (soft-correct)", "e_hierarchy(food, man) = 1.0000"]
    assert cli.main(["hierarchy", "show", "--saiapr", str(demo_quirks)]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("entity  (depth 0") and "  sky-blue  (depth 3;" in shown and "CONFLICT" in shown

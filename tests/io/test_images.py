"""Whether a raw file lies inside its tree: the same answer as resolving both paths whole."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.io import images

NAMES = st.sampled_from(["a", "b", "c", ".", "..", ""])
# A tree: folders and files under the root, and links from under the root to places in it,
# outside it or nowhere; the root itself may be reached through a link.
TREES = st.fixed_dictionaries(
    {
        "folders": st.lists(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3), max_size=5),
        "links": st.lists(
            st.tuples(
                st.lists(st.sampled_from(["a", "b", "c", "l"]), min_size=1, max_size=3),
                st.sampled_from(["in", "out", "nowhere", "root", "up"]),
            ),
            max_size=4,
        ),
        "linked_root": st.booleans(),
        "paths": st.lists(st.lists(NAMES | st.sampled_from(["l", "x.jpg"]), min_size=1, max_size=5), max_size=8),
    }
)


def _link(at: Path, kind: str, root: Path, outside: Path) -> None:
    target = {"in": root / "a", "out": outside, "nowhere": root / "missing", "root": root, "up": Path("..")}[kind]
    if not at.parent.is_dir() or at.exists() or at.is_symlink():
        return
    at.symlink_to(target)


@settings(max_examples=200, deadline=None)
@given(TREES)
def test_inside_is_the_answer_of_resolving_both_paths(tree: dict) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        real, outside = base / "real", base / "outside"
        real.mkdir()
        outside.mkdir()
        for parts in tree["folders"]:
            real.joinpath(*parts).mkdir(parents=True, exist_ok=True)
        for parts, kind in tree["links"]:
            _link(real.joinpath(*parts), kind, real, outside)
        root = real
        if tree["linked_root"]:
            root = base / "via"
            root.symlink_to(real)
        for parts, spelled in itertools.product(tree["paths"], [str, Path]):
            path = os.path.join(str(root), *parts)
            try:
                expected = Path(path).resolve().is_relative_to(root.resolve())
            except RuntimeError:  # a link loop: resolve(strict=False) gives up, as inside does
                continue
            assert images.inside(spelled(root), spelled(path)) == expected, (path, tree)
        shutil.rmtree(real)


def test_a_root_given_with_a_trailing_slash(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "out").symlink_to("/")
    assert images.inside(f"{tmp_path}/", f"{tmp_path}/a/x.jpg")
    assert not images.inside(f"{tmp_path}/", f"{tmp_path}/out/x.jpg")

"""The reference methods' registry: every baseline keeps the contract, is deterministic and gives
what its kind promises; a module that breaks the contract is named in one line."""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench import baselines


@pytest.fixture(scope="module")
def photo() -> np.ndarray:
    """A real photograph (scikit-image's ``chelsea``), a third of its size: the methods' cost
    and segments are a photograph's, not a flat picture's."""
    from skimage import data

    return np.ascontiguousarray(data.chelsea()[::3, ::3])


@pytest.mark.parametrize("name", sorted(baselines.registry()))
def test_every_baseline_is_deterministic_and_gives_its_kind(name: str, photo: np.ndarray) -> None:
    """Twice the same output; a segmentation's hierarchy goes from fine to coarse (its coarsest
    level has fewer segments than its finest); a soft map lies in [0, 1] and marks some pixels."""
    module = baselines.get(name)
    first, again = baselines.predictions(module, photo), baselines.predictions(module, photo)
    assert np.array_equal(first, again)
    if module.KIND == "segmentation":
        counts = [len(np.unique(level)) for level in first]
        assert counts[-1] < counts[0] and counts[-1] >= 1, counts
    else:
        assert 0 < first.max() <= 1 and first.min() >= 0


def test_a_module_that_breaks_the_contract_is_named() -> None:
    """A module without its docstring line, kind, sweep or ``predict(image)``: each lack named."""
    broken = types.ModuleType("regionbench.baselines.broken", "``other``: a summary")
    broken.KIND = "pixels"  # type: ignore[attr-defined]
    broken.predict = lambda image, scale: image  # type: ignore[attr-defined]
    problems = baselines.contract_problems(broken)
    assert any("``broken``" in p for p in problems)
    assert any("KIND" in p for p in problems) and any("SWEEP" in p for p in problems)
    assert any("predict(image)" in p for p in problems)
    assert baselines.contract_problems(baselines.get("canny")) == []
    with pytest.raises(baselines.BaselineError, match="use canny, felzenszwalb"):
        baselines.get("nothing")


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), shape=st.sampled_from([(12, 17), (24, 9), (30, 30)]))
def test_quick_shift_s_sweep_is_each_distance_s_own_run(seed: int, shape: tuple[int, int]) -> None:
    """The tree grown once and cut at each distance gives, at every level, the partition of
    scikit-image's ``quickshift`` run at that distance alone."""
    from skimage.segmentation import quickshift

    rng = np.random.default_rng(seed)
    image = (rng.random((*shape, 3)) * 255).astype(np.uint8)
    image[: shape[0] // 2] //= 3  # two halves, so that modes gather
    levels = baselines.get("quickshift").predict(image)
    for level, d in zip(levels, baselines.get("quickshift").SWEEP, strict=True):
        alone = quickshift(image, ratio=0.5, kernel_size=3, max_dist=d, rng=0, convert2lab=True)
        pairs = set(zip(level.ravel().tolist(), alone.ravel().tolist(), strict=True))
        assert len(pairs) == len(np.unique(level)) == len(np.unique(alone))

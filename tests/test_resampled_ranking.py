"""The ranking measures' bootstrap is the measure itself on the drawn images: each resample's
ImageCLEF MnAP, MiAP, GMnAP and GMiAP equal ``label_sets.imageclef`` of the drawn rows, with tied
confidences, concepts without a relevant image and images drawn many times."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from regionbench.scoring.measures import bootstrap, label_sets, resampled_ranking


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    images=st.integers(1, 30),
    concepts=st.integers(1, 6),
    levels=st.sampled_from([2, 5, 1000]),
)
def test_each_resample_is_the_measure_of_the_drawn_images(seed: int, images: int, concepts: int, levels: int) -> None:
    """Confidences of few ``levels`` tie within a concept; rare concepts are often not drawn."""
    rng = np.random.default_rng(seed)
    relevant = rng.random((images, concepts)) < rng.uniform(0.05, 0.6, concepts)
    confidence = rng.integers(0, levels, (images, concepts)) / levels
    found = resampled_ranking.resampled(relevant, confidence, 20, seed)
    for b, drawn in enumerate(bootstrap.draws(images, 20, seed)):
        expected = label_sets.imageclef(relevant[drawn], confidence[drawn], np.zeros_like(relevant[drawn]))
        for name in ("mnap", "miap", "gmnap", "gmiap"):
            assert abs(found[name][b] - expected[name]) < 1e-12, (b, name, found[name][b], expected[name])


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), images=st.integers(1, 25), labels=st.integers(1, 7), k=st.integers(1, 4))
def test_the_image_task_s_intervals_are_its_measures_on_the_drawn_images(
    seed: int, images: int, labels: int, k: int
) -> None:
    """Top-k F1 over labels and over images, and the mAP over labels, of each resample equal the
    task's measures on the drawn images, over the labels present among them."""
    from regionbench.scoring.tasks import image

    rng = np.random.default_rng(seed)
    vocabulary = [f"l{j}" for j in range(labels)]
    truth = [{x for x in vocabulary if rng.random() < 0.3} for _ in range(images)]
    scores = [{x: float(rng.integers(0, 4)) / 4 for x in vocabulary if rng.random() < 0.8} for _ in range(images)]
    ranked = [label_sets.top_k(s, k) for s in scores]
    settings_ = image.Settings(resamples=15, seed=seed)
    found = image.intervals(vocabulary, list(range(images)), truth, scores, ranked, settings_)["resampled"]["values"]
    for b, drawn in enumerate(bootstrap.draws(images, 15, seed)):
        t, s = [truth[i] for i in drawn], [scores[i] for i in drawn]
        present = [x for x in vocabulary if any(x in y for y in t)]
        top = label_sets.top_k_metrics(t, s, k, present)
        ranking = label_sets.mean_average_precisions(t, s, present)
        assert abs(found["top_k.f1_l"][b] - top["f1_l"]) < 1e-12, b
        assert abs(found["top_k.f1_i"][b] - top["f1_i"]) < 1e-12, b
        assert abs(found["ranking.map_l"][b] - ranking["map_l"]) < 1e-12, b

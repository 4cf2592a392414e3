"""``pixels``: a random forest over multiscale pixel features, one class a pixel.

Source: scikit-image's trainable segmentation (``skimage.feature.multiscale_basic_features``:
intensity, edges and texture of each channel smoothed at sigma 1 to 16) and scikit-learn's
``RandomForestClassifier`` (L. Breiman, "Random Forests", Machine Learning 45, 2001), fitted on a
seeded sample of labelled pixels of the train side's images: at most ``IMAGES`` images, ``PIXELS``
pixels each. A weak, honest floor for a label-map benchmark: no context beyond 16 pixels.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

KIND = "labels"
SWEEP = (32.0,)  # trees of the forest
IMAGES = 40  # train-side images sampled
PIXELS = 1500  # labelled pixels sampled an image
DEPTH = 16  # the trees' depth
COST = 1.9  # CPU-s a megapixel of the images it labels (benchmarks/baselines.py)


def features(image: np.ndarray) -> np.ndarray:
    """The pixel features of ``image`` (H x W x 3, uint8): H x W x F, float32."""
    from skimage.feature import multiscale_basic_features

    return multiscale_basic_features(image, channel_axis=-1, sigma_min=1, sigma_max=16).astype(np.float32)


def train(
    examples: Iterable[tuple[np.ndarray, np.ndarray]], classes: int
) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """A predictor fitted on ``examples``: (RGB image, its class map, ``classes`` where no class
    holds) pairs, of which ``PIXELS`` labelled pixels each are drawn (seeded). The predictor maps an
    image to its H x W class map (int64) and each pixel's confidence (the forest's share of votes
    for that class)."""
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(0)
    rows, targets = [], []
    for image, truth in examples:
        labelled = np.flatnonzero(truth.ravel() < classes)
        if labelled.size == 0:
            continue
        chosen = np.sort(rng.choice(labelled, size=min(PIXELS, labelled.size), replace=False))
        rows.append(features(image).reshape(truth.size, -1)[chosen])
        targets.append(truth.ravel()[chosen])
    if not rows:
        raise ValueError("no labelled pixel in the train side's images")
    forest = RandomForestClassifier(n_estimators=int(SWEEP[0]), max_depth=DEPTH, random_state=0, n_jobs=1)
    forest.fit(np.concatenate(rows), np.concatenate(targets))

    def predict(image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        votes = forest.predict_proba(features(image).reshape(image.shape[0] * image.shape[1], -1))
        best = votes.argmax(axis=1)
        found = np.asarray(forest.classes_, dtype=np.int64)[best].reshape(image.shape[:2])
        return found, votes[np.arange(best.size), best].reshape(image.shape[:2])

    return predict

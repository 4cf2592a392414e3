"""Rendering: an image plan drawn as pixels and region masks (shapes laid out by role, each
region kept visible, painted with its look's colour and texture), and saved as a photo."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from regionbench.synthetic.plans import ImagePlan


def photograph(plan: ImagePlan, pixels: np.ndarray) -> bytes:
    """The rendered scene as the collection stores it: a JPEG (quality 90), gray when planned so."""
    picture = Image.fromarray(pixels)
    if plan.grayscale:
        picture = picture.convert("L")
    jpeg = io.BytesIO()
    picture.save(jpeg, format="JPEG", quality=90)
    return jpeg.getvalue()


def blob(shape: tuple[int, int], cx: float, cy: float, rx: float, ry: float, rng: np.random.Generator) -> np.ndarray:
    """A smooth irregular closed shape: an ellipse whose radius wobbles with a few harmonics."""
    height, width = shape
    mask = np.zeros(shape, dtype=bool)
    reach = 1.5
    r0, r1 = max(int(cy - reach * ry), 0), min(int(cy + reach * ry) + 1, height)
    c0, c1 = max(int(cx - reach * rx), 0), min(int(cx + reach * rx) + 1, width)
    if r0 >= r1 or c0 >= c1:
        return mask
    dx = ((np.arange(c0, c1, dtype=np.float32) + 0.5 - cx) / rx)[None, :]
    dy = ((np.arange(r0, r1, dtype=np.float32) + 0.5 - cy) / ry)[:, None]
    # cos(k*theta + phase) = Re(e^{i phase} u^k) with u = e^{i theta}: powers, no trigonometry.
    z = dx + 1j * dy
    u = z / np.maximum(np.abs(z), 1e-6)
    radius = np.ones(z.shape, dtype=np.float32)
    power = u
    for k in range(2, 6):
        power = power * u
        radius += rng.uniform(0, 0.22 / k) * (np.exp(1j * rng.uniform(0, 2 * np.pi)) * power).real
    mask[r0:r1, c0:c1] = dx**2 + dy**2 < radius**2
    return mask


def _curve(width: int, level: float, amplitude: float, rng: np.random.Generator) -> np.ndarray:
    """A smooth horizon-like curve y(x) over the image columns."""
    x = np.arange(width) / width
    y = np.full(width, level)
    for k in (1, 2, 3, 5):
        y += amplitude / k * np.sin(2 * np.pi * k * x + rng.uniform(0, 2 * np.pi))
    return y


def _person(shape: tuple[int, int], cx: float, cy: float, ry: float, rng: np.random.Generator) -> np.ndarray:
    body = blob(shape, cx, cy + 0.15 * ry, 0.32 * ry, 0.85 * ry, rng)
    head = blob(shape, cx, cy - 0.85 * ry, 0.18 * ry, 0.2 * ry, rng)
    return body | head


def render(plan: ImagePlan, seed: int = 0) -> tuple[np.ndarray, list[np.ndarray]]:
    """Draw one planned image: the RGB pixels and one boolean mask per label, in plan order.

    Regions are drawn back to front into an owner map; a container region (a group of
    persons) keeps the pixels of its members. Every mask is non-empty: a shape that would
    hide too much of the regions behind it is redrawn smaller elsewhere.
    """
    rng = np.random.default_rng([seed, plan.image_id])
    h, w = plan.height, plan.width
    shape = (h, w)
    n = len(plan.labels)
    owner = np.full(shape, -1, dtype=np.int32)
    drawn: list[np.ndarray] = []
    if n == 1:  # a lone region covers the whole image, as in the official collection
        owner[:] = 0
        drawn.append(np.ones(shape, dtype=bool))
    else:
        drawn = _layout(plan, owner, rng)
    masks = [owner == i for i in range(n)]
    for i in range(n):
        if plan.looks[i].kind == "container":
            members = [j for j in range(n) if j != i and plan.looks[j].kind == "person"]
            for j in members:
                masks[i] |= masks[j] & drawn[i]
    image = _paint(plan, owner, rng)
    return image, masks


def _bands(kinds: list[str], owner: np.ndarray, horizon: float, rng: np.random.Generator) -> list[np.ndarray]:
    """Each region's mask, the bands drawn: skies split the area above the horizon, grounds the
    area below it (without a sky the ground still starts low: walls or backdrops fill the top);
    ``owner`` takes them."""
    h, w = owner.shape
    skies = [i for i, k in enumerate(kinds) if k == "sky"]
    grounds = [i for i, k in enumerate(kinds) if k == "ground"]
    yy = np.arange(h)[:, None]
    drawn: list[np.ndarray] = [np.zeros((h, w), bool) for _ in kinds]
    top = np.zeros(w)
    for k, i in enumerate(skies):
        bottom = _curve(w, horizon * (k + 1) / len(skies), 0.03 * h, rng)
        drawn[i] = (yy >= top[None, :]) & (yy < bottom[None, :])
        top = bottom
    start = _curve(w, horizon + 0.08 * h if skies else 0.7 * horizon, 0.04 * h, rng)
    for k, i in enumerate(grounds):
        stop = (
            np.full(w, float(h))
            if k == len(grounds) - 1
            else _curve(w, start.mean() + (h - start.mean()) / (len(grounds) - k), 0.03 * h, rng)
        )
        drawn[i] = (yy >= start[None, :]) & (yy < stop[None, :])
        start = stop
    for i in skies + grounds:
        owner[drawn[i]] = i
    return drawn


def _layout(plan: ImagePlan, owner: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    h, w = owner.shape
    shape = (h, w)
    kinds = [x.kind for x in plan.looks]
    horizon = rng.uniform(0.32, 0.55) * h
    drawn = _bands(kinds, owner, horizon, rng)
    container_box: tuple[float, float, float, float] | None = None
    for i, label in enumerate(plan.labels):
        kind = kinds[i]
        if kind in {"sky", "ground"}:
            continue
        size = plan.looks[i].size * min(h, w)
        for attempt in range(12):
            scale = size * (0.75**attempt) * rng.uniform(0.7, 1.3)
            if kind == "backdrop":
                cx, cy = rng.uniform(0.1, 0.9) * w, horizon + rng.uniform(-0.05, 0.15) * h
                cand = blob(shape, cx, cy, scale * rng.uniform(1.0, 1.8), scale * rng.uniform(0.6, 1.1), rng)
            elif kind == "container":
                cx, cy = rng.uniform(0.3, 0.7) * w, rng.uniform(0.6, 0.75) * h
                cand = blob(shape, cx, cy, scale * 1.4, scale * 0.7, rng)
                container_box = (cx, cy, scale * 1.1, scale * 0.5)
            elif kind == "person":
                if container_box is not None and attempt < 8:
                    bx, by, bw, bh = container_box
                    cx, cy, ry = bx + rng.uniform(-bw, bw), by + rng.uniform(-0.3, 0.3) * bh, bh * 0.9
                else:
                    cx, cy, ry = rng.uniform(0.1, 0.9) * w, rng.uniform(0.55, 0.8) * h, scale
                cand = _person(shape, cx, cy, ry, rng)
            elif label in {"cloud", "sun"}:
                cx, cy = rng.uniform(0.1, 0.9) * w, rng.uniform(0.05, 0.3) * h
                cand = blob(shape, cx, cy, scale * 1.6, scale * 0.8, rng)
            else:
                cx, cy = rng.uniform(0.1, 0.9) * w, rng.uniform(0.35, 0.9) * h
                cand = blob(shape, cx, cy, scale, scale * rng.uniform(0.7, 1.3), rng)
            if cand.any() and _keeps_others_visible(owner, drawn, cand, i, plan):
                break
        else:
            cand = _fallback_shape(owner, drawn, cand, i)
        drawn[i] = cand
        owner[cand] = i
    return drawn


def _keeps_others_visible(
    owner: np.ndarray, drawn: list[np.ndarray], cand: np.ndarray, i: int, plan: ImagePlan
) -> bool:
    """True when, after drawing ``cand``, every earlier region keeps a fair share of itself."""
    covered = owner[cand]
    covered = covered[covered >= 0]
    if covered.size == 0:
        return True
    lost = np.bincount(covered, minlength=len(drawn))
    for j in np.flatnonzero(lost):
        if plan.looks[j].kind == "container" and plan.looks[i].kind == "person":
            continue  # members sit inside their group and do not hide it
        visible = int((owner == j).sum())
        if visible - lost[j] < max(12, 0.3 * drawn[j].sum()):
            return False
    return True


def _fallback_shape(owner: np.ndarray, drawn: list[np.ndarray], cand: np.ndarray, i: int) -> np.ndarray:
    """Shrink a shape to the pixels of regions that can spare them; never empty."""
    visible = np.bincount(owner[owner >= 0], minlength=len(drawn))
    rich = np.flatnonzero(visible > 64)
    allowed = cand & (np.isin(owner, rich) | (owner < 0))
    if allowed.sum() >= 4:
        return allowed
    # Take a small square from the largest visible region (or any free pixel).
    donor = int(np.argmax(visible)) if visible.any() else -1
    rows, cols = np.nonzero(owner == donor)
    mid = len(rows) // 2
    r, c = rows[mid], cols[mid]
    square = np.zeros_like(cand)
    square[r : r + 2, c : c + 2] = owner[r : r + 2, c : c + 2] == donor
    return square


def _smooth_noise(shape: tuple[int, int], cell: int, rng: np.random.Generator) -> np.ndarray:
    h, w = shape
    coarse = rng.standard_normal((h // cell + 2, w // cell + 2)).astype(np.float32)
    return np.asarray(Image.fromarray(coarse, mode="F").resize((w, h), Image.Resampling.BILINEAR))


def _paint(plan: ImagePlan, owner: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    shape = owner.shape
    n = len(plan.labels)
    colour = np.zeros((n + 1, 3), np.float32)
    texture = np.zeros(n + 1, np.float32)
    grain = np.zeros(n + 1, np.float32)
    colour[n] = (118, 108, 96)  # unlabelled background
    texture[n], grain[n] = 14.0, 5.0
    for i, lk in enumerate(plan.looks):
        # Instances vary as much as lighting and objects do in photos, so labels overlap.
        colour[i] = np.clip(np.array(lk.colour) + rng.normal(0, 28, 3), 0, 255)
        texture[i], grain[i] = lk.texture, lk.grain
    index = np.where(owner < 0, n, owner)
    smooth = _smooth_noise(shape, 24, rng)
    fine = _smooth_noise(shape, 3, rng)
    grain_field = rng.standard_normal(shape, dtype=np.float32)
    shade = texture[index] * smooth + 0.6 * texture[index] * fine + grain[index] * grain_field
    light = np.linspace(12, -12, shape[0], dtype=np.float32)[:, None]  # light from above
    pixels = colour[index] + (shade + light)[..., None]
    return np.clip(pixels, 0, 255).astype(np.uint8)


# ---------------------------------------------------------------------------------------------
# Captions: what an IAPR TC-12 annotator would write about a scene.

"""`regionbench view`: a release as a static site, opened from file:// in a real browser
(Debian's Chromium, driven by Playwright), its filters, layers and region details used as a
person would, with no console error."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import COCO_RELEASE, TINY_RELEASE, open_page, regionbench_cli, truth_label_maps, view
from farm import Built
from PIL import Image
from view_helpers import banded_label_maps, evaluate, image_data, scored_detections, scored_site

import regionbench
from regionbench.scoring.tasks import _coco_truth as coco_truth
from regionbench.scoring.tasks import _masks
from regionbench.scoring.tasks.segments import segment_maps


@pytest.fixture(scope="module")
def tiny_site(tiny_build: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "tiny"
    done = view(str(tiny_build / TINY_RELEASE), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith(f"open {out / 'index.html'} in a browser") and "MiB" in done.stdout
    return out


def test_the_site_is_self_contained_and_names_no_place(tiny_site: Path, tiny_build: Path) -> None:
    release = tiny_build / TINY_RELEASE
    images = pq.read_table(release / "data/images.parquet", columns=["image_id"]).column("image_id").to_pylist()
    assert sorted(int(p.stem) for p in (tiny_site / "thumb").glob("*.jpg")) == sorted(images)
    for path in (tiny_site / "thumb").glob("*.jpg"):
        with Image.open(path) as im:
            assert max(im.size) <= 256
    for path in tiny_site.rglob("*"):
        if path.is_file() and path.suffix in (".html", ".js", ".css"):
            text = path.read_text()
            assert str(tiny_build) not in text, path
            # nothing fetched from a network (an SVG namespace is a name, not an address)
            assert not any(f in text for f in ('src="http', 'href="http', "url(http", "fetch(", "XMLHttpRequest")), path


def test_a_damaged_release_and_another_release_s_run_are_refused(tiny_build: Path, tmp_path: Path) -> None:
    damaged = Path(shutil.copytree(tiny_build / TINY_RELEASE, tmp_path / "v1.0.0"))
    table = damaged / "data/images.parquet"
    table.write_bytes(table.read_bytes()[:-100] + bytes(100))
    done = view(str(damaged), "--out", str(tmp_path / "site"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    report = tmp_path / "run.json"
    report.write_text(json.dumps({"release": {"dataset": "other", "version": "9.9.9"}, "per_image": {}}))
    done = view(str(tiny_build / TINY_RELEASE), "--out", str(tmp_path / "site"), "--run", str(report))
    assert done.returncode == 2 and "scores other v9.9.9, not tiny v1.0.0" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.browser
def test_the_index_filters_pages_and_opens_an_image(browser, tiny_site: Path, tiny_build: Path) -> None:
    regions = pd.read_parquet(
        tiny_build / TINY_RELEASE / "data/regions.parquet", columns=["image_id", "label", "geometry"]
    )
    errors: list[str] = []
    page = open_page(browser, f"file://{tiny_site}/index.html", errors)
    page.wait_for_selector(".tile")
    total = regions["image_id"].nunique()
    assert page.inner_text("#count") == f"{total} of {total} images"
    assert page.locator(".tile").count() == min(total, 48)
    label = regions["label"].value_counts().index[-1]  # the rarest label
    page.select_option(
        "#label", label=next(o for o in page.locator("#label option").all_inner_texts() if o.startswith(f"{label} ("))
    )
    with_label = sorted(regions.loc[regions["label"] == label, "image_id"].unique())
    assert page.inner_text("#count") == f"{len(with_label)} of {total} images"
    assert [int(t) for t in page.locator(".tile").evaluate_all("ts => ts.map(t => t.dataset.id)")] == with_label[:48]
    page.locator(".tile").first.click()
    page.wait_for_selector("#outlines path")
    image_id = with_label[0]
    assert page.title() == f"image {image_id}"
    drawn = regions[regions["image_id"] == image_id]
    assert page.locator("#outlines path").count() == drawn["geometry"].notna().sum()  # labels only: listed
    assert page.locator("#regions tr").count() == len(drawn) + 1
    page.locator("#outlines path").last.hover()  # the region drawn last is on top of the others
    shown = page.inner_text("#region")
    assert any(shown.startswith(f"{x} (") for x in drawn["label"]) and "area_norm" in shown and "->" in shown
    page.locator("#layers input").first.uncheck()
    assert page.locator("#outlines g").first.is_hidden()
    assert errors == []
    page.screenshot(path=str(tiny_site.parent / "image.png"))


@pytest.mark.browser
def test_several_annotators_sort_by_agreement_and_switch_layers(browser, coco_build: Path, tmp_path: Path) -> None:
    release, raw = coco_build / COCO_RELEASE, coco_build / "resources/raw/coco-tiny"
    out = tmp_path / "site"
    done = view(str(release), "--out", str(out), "--images", str(raw))  # the pixels from the raw tree
    assert done.returncode == 0, done.stderr
    pairs = pd.read_parquet(release / "data/agreement.parquet", columns=["image_id", "pixel_kappa"])
    means = pairs.groupby("image_id")["pixel_kappa"].mean()
    worst = sorted(means.index, key=lambda i: (means[i], i))
    errors: list[str] = []
    page = open_page(browser, f"file://{out}/index.html", errors)
    page.wait_for_selector(".tile")
    page.select_option("#sort", "agreement")
    ids = [int(t) for t in page.locator(".tile").evaluate_all("ts => ts.map(t => t.dataset.id)")]
    assert ids == worst[: len(ids)]
    page.locator(".tile").first.click()
    page.wait_for_selector("#outlines path")
    annotators = sorted(pd.read_parquet(release / "data/regions.parquet", columns=["annotator"])["annotator"].unique())
    assert page.locator("#layers input").evaluate_all("bs => bs.map(b => b.dataset.annotator)") == annotators
    # one layer filled, the others outlined: their paths' fill is transparent
    fills = page.locator("#outlines g").evaluate_all(
        "gs => gs.map(g => g.querySelector('path') ? getComputedStyle(g.querySelector('path')).fillOpacity : null)"
    )
    drawn = [f for f in fills if f is not None]
    assert float(drawn[0]) > 0 and all(float(f) == 0 for f in drawn[1:]), fills
    before = page.locator("#outlines path:visible").count()
    page.locator('#layers input[data-annotator="consensus"]').uncheck()
    after = page.locator("#outlines path:visible").count()
    regions = pd.read_parquet(release / "data/regions.parquet", columns=["image_id", "annotator"])
    consensus = ((regions["image_id"] == worst[0]) & (regions["annotator"] == "consensus")).sum()
    assert before - after == consensus
    assert "agreement" in page.inner_text("#about")
    # the card's figures: the humans' ceiling on the release's concepts beside the agreement
    page.go_back()
    ceiling = json.loads((release / "results/concepts.json").read_text())
    rows = dict(
        page.locator("#figures tr").evaluate_all("rs => rs.map(r => [r.cells[0].textContent, r.cells[1].textContent])")
    )
    assert rows["human cgF1 (concepts)"] == f"{ceiling['cgF1']:.4f}" and "fleiss kappa" in rows
    assert errors == []


@pytest.mark.browser
def test_a_scored_run_sorts_the_index_and_shows_its_labels(browser, tiny_build: Path, tmp_path: Path) -> None:
    """A region-task run that mislabels the regions of a few images: the index sorts those
    first, and an image page shows the run's label beside each region's."""
    release = tiny_build / TINY_RELEASE
    test = pd.read_parquet(release / "data/subsets.parquet")
    test = test[(test["subset"] == "H") & (test["split"] == "test")].sort_values(["image_id", "region_id"])
    wrong = sorted(test["image_id"].unique())[:3]
    predictions = test[["image_id", "annotator", "region_id", "label"]].copy()
    flipped = predictions["image_id"].isin(wrong)
    predictions.loc[flipped, "label"] = "sky"
    predictions.loc[flipped & (test["label"] == "sky").to_numpy(), "label"] = "grass"
    predictions.to_csv(tmp_path / "run.csv", index=False)
    report = tmp_path / "report.json"
    done = regionbench_cli(
        "evaluate",
        "--release",
        str(release),
        "--predictions",
        str(tmp_path / "run.csv"),
        "--task",
        "region",
        "--out",
        str(report),
    )
    assert done.returncode == 0, done.stderr
    scores = json.loads(report.read_text())["per_image"]
    assert {int(i) for i, s in scores.items() if s < 1} == set(wrong)
    out = tmp_path / "site"
    assert view(str(release), "--out", str(out), "--run", str(report)).returncode == 0
    errors: list[str] = []
    page = open_page(browser, f"file://{out}/index.html", errors)
    page.wait_for_selector(".tile")
    page.select_option("#sort", "score")
    ids = [int(t) for t in page.locator(".tile").evaluate_all("ts => ts.map(t => t.dataset.id)")]
    assert sorted(ids[:3]) == wrong and all(scores[str(i)] == 1.0 for i in ids[3:] if str(i) in scores)
    page.locator(f'.tile[data-id="{ids[0]}"]').click()
    page.wait_for_selector("#regions td.wrong")
    assert page.locator("#regions td.wrong").count() == int((test["image_id"] == ids[0]).sum())
    assert "run score" in page.inner_text("#about")
    assert errors == []


# --- a mask task's run drawn beside the truth ---------------------------------------------------


def test_a_label_map_run_is_drawn_label_by_label(tiny_build: Path, tmp_path: Path) -> None:
    """Each label of a run's map is one shape of its pixels; the label the truth lacks (a band
    over the top third) is right nowhere, every other label right wherever the truth speaks."""
    release = tiny_build / TINY_RELEASE
    banded = banded_label_maps(release, tmp_path / "maps")
    report = scored_site(release, tmp_path / "maps", "semantic", tmp_path)
    data = regionbench.load(release)
    label_of = dict(zip(data.vocabulary["label_id"].astype(int), data.vocabulary["label"], strict=True))
    for image_id, band in banded.items():
        with Image.open(tmp_path / "maps" / f"{image_id}.png") as im:
            values, counts = np.unique(np.asarray(im), return_counts=True)
        expected = {label_of[int(v)]: int(n) for v, n in zip(values, counts, strict=True) if v != 255}
        page = image_data(tmp_path / "site", image_id)
        assert {s["label"]: s["facts"]["area"] for s in page["drawn"]} == expected
        assert all(s["path"] for s in page["drawn"])
        rights = {s["label"]: s["facts"]["right"] for s in page["drawn"]}
        assert rights.pop(band) in (0.0, None) and all(r == 1.0 for r in rights.values())
        assert page["score"] == pytest.approx(report["per_image"][str(image_id)])


def test_a_segmentation_run_is_drawn_segment_by_segment(tiny_build: Path, tmp_path: Path) -> None:
    """Each segment of the run's segmentation (at the image's best threshold) one shape."""
    release = tiny_build / TINY_RELEASE
    data = regionbench.load(release)
    (tmp_path / "run").mkdir()
    maps = segment_maps(data, "saiapr", _masks.scored_images(data, "test"))
    for image_id, labels in maps.items():
        Image.fromarray(labels.astype(np.uint16)).save(tmp_path / "run" / f"{image_id}.png")
    scored_site(release, tmp_path / "run", "segments", tmp_path)
    for image_id, labels in maps.items():
        page = image_data(tmp_path / "site", image_id)
        values, counts = np.unique(labels, return_counts=True)
        assert [(s["facts"]["segment"], s["facts"]["area"]) for s in page["drawn"]] == list(
            zip(values.tolist(), counts.tolist(), strict=True)
        )
        assert page["score"] == 1.0 and all(s["label"] is None and s["path"] for s in page["drawn"])


def test_an_instances_run_is_drawn_as_it_was_matched(coco_build: Path, tmp_path: Path) -> None:
    """Each detection drawn with what became of it; per image, what the figures count of them
    gives back the report's F1 at IoU 0.5: 2 matched / (instances + detections counted), and the
    truth instances drawn as missed are those no detection took. A detection's outcome is TIDE's
    type (the page's counts are the report's), its IoU the best with any truth instance."""
    from pycocotools import mask as coco_mask

    release = coco_build / COCO_RELEASE
    detections = scored_detections(release, tmp_path / "dets.json")
    report = scored_site(release, tmp_path / "dets.json", "instances", tmp_path, "--tide")
    regions = pd.read_parquet(
        release / "data/regions.parquet", columns=["image_id", "annotator", "region_id", "label", "iscrowd", "mask"]
    )
    truth = regions[(regions["annotator"] == report["truth"]) & regions["mask"].notna() & ~regions["iscrowd"]]
    pages = {int(i): image_data(tmp_path / "site", int(i))["drawn"] or [] for i in report["per_image"]}
    data = regionbench.load(release)
    release_id = {v: k for k, v in coco_truth.numbering(data.table("coverage"), report["truth"]).items()}
    found = {i: [s for s in drawn if s["facts"]["outcome"] != "missed"] for i, drawn in pages.items()}
    assert sum(len(drawn) for drawn in found.values()) == len(detections)
    outcomes: Counter[str] = Counter()
    for image_id, f1 in report["per_image"].items():
        drawn, mine = found[int(image_id)], truth[truth["image_id"] == int(image_id)]
        outcomes.update(s["facts"]["outcome"] for s in drawn)
        matched = sum(s["facts"]["counted"] == "matched" for s in drawn)
        counted = len(mine) + sum(s["facts"]["counted"] in ("matched", "unmatched") for s in drawn)
        assert f1 == pytest.approx(2 * matched / counted if counted else 1.0)
        assert [s["facts"]["score"] for s in drawn] == sorted((s["facts"]["score"] for s in drawn), reverse=True)
        missed = [s for s in pages[int(image_id)] if s["facts"]["outcome"] == "missed"]
        assert len(missed) == len(mine) - matched and all(s["path"] for s in missed)
        assert {s["facts"]["region"] for s in missed} <= set(mine["region_id"])
        rles = [{"size": list(m["size"]), "counts": m["counts"]} for m in mine["mask"]]
        expected = []
        for d in (d for d in detections if release_id.get(d["image_id"], d["image_id"]) == int(image_id)):
            ious = coco_mask.iou([d["segmentation"]], rles, [0] * len(rles)) if rles else np.zeros((1, 0))
            expected.append((d["score"], round(float(np.max(ious, initial=0.0)), 4)))
        assert sorted((s["facts"]["score"], s["facts"]["iou"]) for s in drawn) == sorted(expected)
    tide = report["tide"]["counts"]
    assert {k: outcomes[k] for k in ("Cls", "Loc", "Both", "Dupe", "Bkg")} == {
        k: tide[k] for k in ("Cls", "Loc", "Both", "Dupe", "Bkg")
    }
    assert outcomes["match"] and outcomes["Cls"]  # a right place with a wrong label is its own outcome


def test_predictions_other_than_those_scored_are_refused(tiny_build: Path, tmp_path: Path) -> None:
    release = tiny_build / TINY_RELEASE
    written = truth_label_maps(release, tmp_path / "maps")
    evaluate(release, tmp_path / "maps", "semantic", tmp_path / "report.json")
    site = str(tmp_path / "site")
    done = view(str(release), "--out", site, "--run", str(tmp_path / "report.json"))
    assert done.returncode == 0 and "scored, not drawn: give --predictions" in done.stdout
    (tmp_path / "maps" / f"{written[0]}.png").unlink()
    done = view(
        str(release), "--out", site, "--run", str(tmp_path / "report.json"), "--predictions", str(tmp_path / "maps")
    )
    assert done.returncode == 2 and "not the predictions the report scored" in done.stderr
    done = view(str(release), "--out", site, "--predictions", str(tmp_path / "maps"))
    assert done.returncode == 2 and "give the report that scored them with --run" in done.stderr
    region_run = tmp_path / "region.json"
    region_run.write_text(
        json.dumps({"release": {"dataset": "tiny", "version": "1.0.0"}, "task": "region", "per_image": {}})
    )
    done = view(str(release), "--out", site, "--run", str(region_run), "--predictions", str(tmp_path / "maps"))
    assert done.returncode == 2 and "not of a mask task" in done.stderr


@pytest.mark.browser
def test_an_instances_run_is_a_layer_filtered_by_score(browser, coco_build: Path, tmp_path: Path) -> None:
    release, raw = coco_build / COCO_RELEASE, coco_build / "resources/raw/coco-tiny"
    detections = scored_detections(release, tmp_path / "dets.json")
    report = evaluate(release, tmp_path / "dets.json", "instances", tmp_path / "report.json")
    out = tmp_path / "site"
    done = view(str(release), "--out", str(out), "--images", str(raw), "--run", str(tmp_path / "report.json"),
                "--predictions", str(tmp_path / "dets.json"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    errors: list[str] = []
    page = open_page(browser, f"file://{out}/index.html", errors)
    page.wait_for_selector(".tile")
    page.select_option("#sort", "score")
    worst = int(page.locator(".tile").first.get_attribute("data-id"))
    assert report["per_image"][str(worst)] == min(report["per_image"].values())
    page.locator(".tile").first.click()
    page.wait_for_selector("#outlines g.run")
    mine = [s for s in image_data(out, worst)["drawn"] if s["facts"]["outcome"] != "missed"]
    run = page.locator("#outlines g.run path")
    visible = lambda: run.evaluate_all("ps => ps.filter(p => p.style.display !== 'none').length")  # noqa: E731
    assert run.count() == len(mine) and visible() == sum(s["facts"]["score"] >= 0.5 for s in mine)
    page.locator("#min-score").fill("0")
    assert visible() == len(mine) and page.inner_text("#run-count") == f"({len(mine)} of {len(mine)})"
    page.locator("#outlines g.run path").last.hover()  # the best detection, drawn on top
    shown = page.inner_text("#region")
    assert "(the run, instances 1)" in shown and f"{mine[0]['facts']['score']}" in shown
    page.locator('#layers input[data-annotator="the run"]').uncheck()
    assert page.locator("#outlines g.run").is_hidden()
    assert page.locator("#predictions tr").count() == len(mine) + 1
    assert errors == []
    assert len(detections) > len(mine)


def test_a_label_map_run_of_its_own_pixel_values_is_drawn_by_its_names(tiny_build: Path, tmp_path: Path) -> None:
    """Maps whose pixel values are the run's own, named by --label-names: the report keeps the
    names, and the site draws the labels they name."""
    release = tiny_build / TINY_RELEASE
    written = truth_label_maps(release, tmp_path / "maps")
    data = regionbench.load(release)
    label_of = dict(zip(data.vocabulary["label_id"].astype(int), data.vocabulary["label"], strict=True))
    values = sorted(
        {int(v) for i in written for v in np.unique(np.asarray(Image.open(tmp_path / "maps" / f"{i}.png")))} - {255}
    )
    own = {v: k for k, v in enumerate(values)}  # the run numbers its labels 0, 1, 2, ...
    for image_id in written:
        path = tmp_path / "maps" / f"{image_id}.png"
        pixels = np.asarray(Image.open(path))
        Image.fromarray(np.vectorize(lambda v: own.get(int(v), 255))(pixels).astype(np.uint8)).save(path)
    names = tmp_path / "names.json"
    names.write_text(json.dumps({str(k): label_of[v] for v, k in own.items()}))
    report = evaluate(release, tmp_path / "maps", "semantic", tmp_path / "r.json", "--label-names", str(names))
    assert report["measures"]["pixel_accuracy"] == 1.0
    names.unlink()  # the report carries the names: the site needs only the maps
    done = view(str(release), "--out", str(tmp_path / "site"), "--run", str(tmp_path / "r.json"),
                "--predictions", str(tmp_path / "maps"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    for image_id in written:
        truth = set(data.regions.loc[(data.regions["image_id"] == image_id), "label"])
        drawn = image_data(tmp_path / "site", image_id)["drawn"]
        assert {s["label"] for s in drawn} <= truth and all(s["facts"]["right"] in (1.0, None) for s in drawn)


@pytest.mark.browser
def test_an_index_in_parts_filters_and_sorts_every_part(
    browser, tiny_build: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index data in parts (five images a file here): the first page is drawn from the first
    part, and once every part is read the count, the filter and the sort span every image."""
    from regionbench.client import view as site_writer

    monkeypatch.setattr(site_writer, "INDEX_PART", 5)
    release = tiny_build / TINY_RELEASE
    written = site_writer.write_site(regionbench.load(release), tmp_path / "site")
    images = sorted(pq.read_table(release / "data/images.parquet", columns=["image_id"]).column(0).to_pylist())
    assert len(list((written.folder / "data" / "index").glob("*.js"))) == -(-len(images) // 5) > 2
    regions = pd.read_parquet(release / "data/regions.parquet", columns=["image_id", "label"])
    errors: list[str] = []
    page = open_page(browser, f"file://{written.folder}/index.html", errors)
    page.wait_for_selector("body[data-indexed=all]")
    assert page.inner_text("#count") == f"{len(images)} of {len(images)} images"
    label = regions["label"].value_counts().index[0]  # the commonest label: images in several parts
    page.select_option(
        "#label", label=next(o for o in page.locator("#label option").all_inner_texts() if o.startswith(f"{label} ("))
    )
    with_label = sorted(regions.loc[regions["label"] == label, "image_id"].unique())
    assert page.inner_text("#count") == f"{len(with_label)} of {len(images)} images"
    assert [int(t) for t in page.locator(".tile").evaluate_all("ts => ts.map(t => t.dataset.id)")] == with_label
    assert errors == []


def test_serve_serves_the_site_until_interrupted(tiny_build: Path, tmp_path: Path) -> None:
    """--serve: the site's line, then the address, each as soon as it is true (a pipe, not a
    terminal, reads them); the pages over HTTP; Ctrl-C stops it in one line; a port in use is
    one line too."""
    import signal
    import socket
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "regionbench", "view", str(tiny_build / TINY_RELEASE), "--out",
               str(tmp_path / "site"), "--serve", "--port", str(port)]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        assert server.stdout.readline().endswith("in a browser\n")
        assert server.stdout.readline() == f"serving {tmp_path / 'site'} at http://127.0.0.1:{port}/ (Ctrl-C stops)\n"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=10) as answer:
            assert answer.status == 200 and b"view.js" in answer.read()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/data/meta.js", timeout=10) as answer:
            assert answer.read().startswith(b'RB.load("meta",')
        busy = subprocess.run(command, capture_output=True, text=True)  # the same port, taken
        assert busy.returncode == 2 and f"--port {port}: cannot serve there" in busy.stderr
        assert len(busy.stderr.strip().splitlines()) == 1
        # A browser's preconnect: a connection that sends nothing, its handler waiting on it.
        idle = socket.create_connection(("127.0.0.1", port))
    finally:
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=5)  # stops within seconds, whatever connection is open
        idle.close()
    assert server.returncode == 0 and out == f"stopped serving {tmp_path / 'site'}\n" and err == ""


def test_a_box_run_is_drawn_as_its_boxes(coco_build: Path, tmp_path: Path) -> None:
    """Detections without masks, scored with --iou-type bbox: each drawn as its box."""
    release = coco_build / COCO_RELEASE
    detections = scored_detections(release, tmp_path / "dets.json")
    for d in detections:
        del d["segmentation"]
    (tmp_path / "dets.json").write_text(json.dumps(detections))
    report = scored_site(release, tmp_path / "dets.json", "instances", tmp_path, "--iou-type", "bbox")
    boxes = {tuple(d["bbox"]) for d in detections}
    drawn = [s for i in report["per_image"] for s in image_data(tmp_path / "site", int(i))["drawn"] or []]
    drawn = [s for s in drawn if s["facts"]["outcome"] != "missed"]  # the truth no box took: masks
    assert len(drawn) == len(detections)
    for shape in drawn:
        xs, ys = np.array(shape["path"][1:-1].split(), dtype=float).reshape(-1, 2).T
        assert (xs.min(), ys.min(), xs.max() - xs.min(), ys.max() - ys.min()) in boxes and len(xs) == 5


@pytest.mark.browser
def test_the_audit_filter_shows_the_label_error_candidates(browser, coco_build: Path, tmp_path: Path) -> None:
    """The index offers the audits' findings as a filter (only the kinds the release has), and an
    image page lists its candidates with their evidence."""
    release = coco_build / COCO_RELEASE
    done = view(str(release), "--out", str(tmp_path / "site"), "--images", str(coco_build / "resources/raw/coco-tiny"))
    assert done.returncode == 0, done.stderr
    audit = pd.read_parquet(release / "data/audit_labels.parquet")
    copies = pd.read_parquet(release / "data/audit_duplicates.parquet")
    assert len(audit) and copies.empty
    errors: list[str] = []
    page = open_page(browser, f"file://{tmp_path / 'site'}/index.html", errors)
    page.wait_for_selector(".tile")
    assert page.locator("#audit-filter").is_visible()
    assert page.locator('#audit option[value="d"]').evaluate("o => o.hidden")  # no near-copies here
    page.select_option("#audit", "l")
    flagged = sorted(audit["image_id"].unique())
    total = pd.read_parquet(release / "data/images.parquet", columns=["image_id"])["image_id"].nunique()
    assert page.inner_text("#count") == f"{len(flagged)} of {total} images"
    assert [int(t) for t in page.locator(".tile").evaluate_all("ts => ts.map(t => t.dataset.id)")] == flagged[:48]
    page.locator(".tile").first.click()
    page.wait_for_selector("#audit li")
    mine = audit[audit["image_id"] == flagged[0]].sort_values("rank")
    items = page.locator("#audit li").all_inner_texts()
    assert len(items) == len(mine)
    for item, (_, row) in zip(items, mine.iterrows(), strict=True):
        assert item.startswith(f"label-error candidate #{row['rank']}: region {row['region_id']} {row['label']}")
        assert row["evidence"] in item
    assert errors == []


def colours_by_image(site: Path) -> dict[int, dict[str, set[str]]]:
    """Per image of a written site, each label's colours on its page (every layer)."""
    out: dict[int, dict[str, set[str]]] = {}
    for page in sorted((site / "data" / "img").glob("*.js")):
        image = image_data(site, int(page.stem))
        found: dict[str, set[str]] = {}
        for regions in image["layers"].values():
            for region in regions:
                found.setdefault(region["label"], set()).add(region["colour"])
        out[image["id"]] = found
    return out


def test_labels_in_one_image_never_share_a_colour(tiny_site: Path, coco_build: Path, tmp_path: Path) -> None:
    """Counted in the written sites: on every image page a label has one colour and no two
    labels have the same (the demo-like tiny release, and three annotators' COCO release)."""
    coco_site = tmp_path / "coco"
    done = view(
        str(coco_build / COCO_RELEASE), "--out", str(coco_site), "--images", str(coco_build / "resources/raw/coco-tiny")
    )
    assert done.returncode == 0, done.stderr
    for site in (tiny_site, coco_site):
        pages = colours_by_image(site)
        assert pages
        for image, found in pages.items():
            assert all(len(c) == 1 for c in found.values()), (image, found)
            used = [next(iter(c)) for c in found.values()]
            assert len(set(used)) == len(used), (image, found)
    # the legend's colour is the one a label has wherever no other label of the image took it
    meta = json.loads((coco_site / "data" / "meta.js").read_text()[len('RB.load("meta",') : -len(");\n")])
    legend = {label["name"]: label["colour"] for label in meta["labels"]}
    kept = sum(
        next(iter(c)) == legend[name] for found in colours_by_image(coco_site).values() for name, c in found.items()
    )
    assert kept > 0


def test_a_release_without_labels_colours_region_by_region(release: Callable[[str], Built], tmp_path: Path) -> None:
    """A label-free release (a generated BSDS500 tree: every segment one category): each
    region of an annotator's layer its own colour."""
    built = release("bsds")
    raw, folder = built.raw, built.folder
    site = tmp_path / "site"
    done = view(str(folder), "--out", str(site), "--images", str(raw))
    assert done.returncode == 0, done.stderr
    most = 0
    for page in sorted((site / "data" / "img").glob("*.js")):
        image = image_data(site, int(page.stem))
        for regions in image["layers"].values():
            colours = [r["colour"] for r in regions]
            assert len(set(colours)) == len(colours)
            most = max(most, len(colours))
    assert most > 1


@pytest.mark.browser
def test_an_unknown_image_says_so_and_ids_are_strings(browser, tiny_site: Path) -> None:
    """An id the release lacks (or no id) is one clear line, not a blank page; the data write ids
    as strings, which a browser cannot round (ids past 2^53 come from hashed file names)."""
    index = json.loads((tiny_site / "data" / "index" / "0.js").read_text()[len('RB.load("index",') : -len(");\n")])
    assert index and all(isinstance(entry[0], str) and entry[0].isdigit() for entry in index)
    known = {int(entry[0]) for entry in index}
    for asked in (str(2**63 - 1), "abc", ""):
        assert asked == "" or not asked.isdigit() or int(asked) not in known
        page = browser.new_page()
        page.goto(f"file://{tiny_site}/image.html?id={asked}")
        page.wait_for_selector("body[data-missing]")
        assert page.title() == "no such image"
        assert "has no image" in page.inner_text("#about") and "choose one from all images" in page.inner_text("#about")
        page.close()


@pytest.mark.browser
def test_filters_and_sorts_that_select_nothing_are_not_offered(browser, tiny_site: Path) -> None:
    """The tiny release has one annotator, no split of its own and no run: no annotator or split
    filter, no sort by agreement or score."""
    errors: list[str] = []
    page = open_page(browser, f"file://{tiny_site}/index.html", errors)
    page.wait_for_selector(".tile")
    shown = {key: page.locator(f"#{key}").is_visible() for key in ("label", "annotator", "subset", "split")}
    assert shown == {"label": True, "annotator": False, "subset": True, "split": False}
    hidden = page.locator("#sort option").evaluate_all("os => os.filter(o => o.hidden).map(o => o.value)")
    assert sorted(hidden) == ["agreement", "score"]
    assert errors == []

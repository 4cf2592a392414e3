"""`regionbench view --run`: a scored run's own page (its figures beside the humans', the
per-class table, precision-recall curves, the confusions that open their images), the image
pages' previous/next in the index's filtered order, zoom and keys, in Chromium with no console
error, on a COCO release with an instances run, a label map run on the tiny release and a
label-free release with a segments run. Each view's screenshot is docs/view.md's picture."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import scipy.io
from conftest import COCO_RELEASE, TINY_RELEASE, open_page, screenshot, truth_label_maps, view
from farm import Built
from PIL import Image
from view_helpers import banded_label_maps, evaluate, image_data, scored_detections, scored_site, site_data

import regionbench

pytestmark = pytest.mark.browser


def table_rows(page, selector: str) -> list[list[str]]:
    return page.locator(f"{selector} tr").evaluate_all(
        "rows => rows.slice(1).map(r => [...r.cells].map(c => c.textContent))"
    )


def figure(value: float | None) -> str:
    """A figure as the page writes it (``RB.figure``)."""
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() and abs(value) > 1 else f"{value:.4f}"


def test_an_instances_run_s_page_gives_the_report_s_figures(browser, coco_build: Path, tmp_path: Path) -> None:
    """The run page of a COCO release's instances run: every headline figure the report's, the
    humans' AP beside the run's, the per-class AP sortable, COCO's curves drawn, TIDE's error
    types (dAP, count) whose links filter the index by type; an image's page
    names each detection's outcome as TIDE does, lists the truth it missed and strikes nothing
    through."""
    release, raw = coco_build / COCO_RELEASE, coco_build / "resources/raw/coco-tiny"
    scored_detections(release, tmp_path / "dets.json")
    report = evaluate(release, tmp_path / "dets.json", "instances", tmp_path / "report.json", "--tide")
    site = tmp_path / "site"
    done = view(str(release), "--out", str(site), "--images", str(raw), "--run", str(tmp_path / "report.json"),
                "--predictions", str(tmp_path / "dets.json"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    errors: list[str] = []
    page = open_page(browser, f"file://{site}/index.html", errors)
    page.wait_for_selector(".tile")
    page.click("#evaluation a")
    page.wait_for_selector("#headline tr")
    ceiling, intervals = report["human_ceiling"], report["intervals"]

    def with_interval(name: str, value: float) -> str:
        around = intervals.get(name)
        return figure(value) + (f" [{figure(around['low'])}, {figure(around['high'])}]" if around else "")

    expected = [
        [name.replace("_", " "), with_interval(name, value), figure(ceiling.get(name))]
        for name, value in report["measures"].items()
    ]
    assert table_rows(page, "#headline") == expected
    assert (
        {row[0] for row in expected if row[2]}
        == {"AP", "AP50", "AP75"}
        == {row[0] for row in expected if "[" in row[1]}
    )
    assert page.locator("#intervals").inner_text() == (
        "[low, high]: 95% intervals, percentile bootstrap over images (1000 resamples, seed 0)"
    )
    assert page.locator("#compared-section").is_hidden()
    per_class = {f"{c['name']} (id {k})": c["ap"] for k, c in report["per_category_ap"].items() if c["ap"] is not None}
    page.click('#per-class th[data-column="1"]')  # the best first
    rows = table_rows(page, "#per-class")
    assert [float(v) for _, v in rows] == sorted((round(v, 4) for v in per_class.values()), reverse=True)
    assert {name for name, _ in rows} == set(per_class)
    curve = page.locator("#curves img")
    assert curve.evaluate("img => img.complete && img.naturalWidth > 0")
    svg = (site / "charts" / curve.get_attribute("src").split("/")[-1]).read_text()
    for name in ("AP50", "AP75", "AP"):  # the legend gives each curve's mean: the report's figure
        assert f"{name} {report['measures'][name]:.3f}" in svg
    assert page.locator("#confusion-section").is_hidden()  # detections have no confusion matrix
    # TIDE's section: each error type's dAP (a bar) and count, a type opening the images that have it
    tide, types = report["tide"], ["Cls", "Loc", "Both", "Dupe", "Bkg", "Miss"]
    assert table_rows(page, "#tide") == [
        [k, figure(round(tide["main"][k], 4)), "", str(tide["counts"][k])] for k in types
    ]
    assert page.locator("#tide-about").inner_text().startswith(f"TIDE's AP50 {figure(round(tide['ap'], 4))}")
    screenshot(page, "view-run-page.png", tmp_path)
    kind = next(k for k in types if tide["counts"][k])
    page.click(f'#tide tr[data-error="{kind}"] a')
    page.wait_for_function("document.body.dataset.indexed === 'all'")
    assert page.locator("#error").input_value() == kind
    shown = [int(t.get_attribute("data-id")) for t in page.locator(".tile").all()]
    outcome = "missed" if kind == "Miss" else kind
    assert shown and all(any(d["facts"]["outcome"] == outcome for d in image_data(site, i)["drawn"]) for i in shown)
    page.goto(f"file://{site}/run.html")
    page.goto(f"file://{site}/index.html?sort=score")
    page.locator(".tile").first.click()
    page.wait_for_selector("#outlines g.run")
    worst = int(re.search(r"id=(\d+)", page.url).group(1))
    shapes = image_data(site, worst)["drawn"]
    missed = [s for s in shapes if s["facts"]["outcome"] == "missed"]
    assert page.locator("#missed li").count() == len(missed) > 0
    assert page.locator("#outlines g.missed path").count() == len(missed)
    outcomes = page.locator("#predictions tr td:nth-child(4)").all_inner_texts()
    named = {"match": "true positive", "Cls": "right place, wrong label (Cls)", "Loc": "poorly placed (Loc)",
             "Both": "wrong label, poorly placed (Both)", "Dupe": "duplicate (Dupe)", "Bkg": "background (Bkg)"}  # fmt: skip
    found = [s["facts"]["outcome"] for s in shapes if s["facts"]["outcome"] != "missed"]
    assert [text.lstrip("✓✗ ") for text in outcomes] == [named.get(o, o) for o in found]
    struck = page.locator(".wrong, .right").evaluate_all("ns => ns.map(n => getComputedStyle(n).textDecorationLine)")
    assert struck and set(struck) == {"none"}
    page.locator("#min-score").fill("0")
    screenshot(page, "view-run.png", tmp_path)
    # another run against this one: the run page's table is compare's, a row a headline measure
    import json

    from regionbench.scoring import compare

    fewer = json.loads((tmp_path / "dets.json").read_text())[::2]
    (tmp_path / "fewer.json").write_text(json.dumps(fewer))
    other = evaluate(release, tmp_path / "fewer.json", "instances", tmp_path / "fewer-report.json", "--tide")
    done = view(str(release), "--out", str(tmp_path / "compared"), "--images", str(raw), "--run",
                str(tmp_path / "report.json"), "--compare", str(tmp_path / "fewer-report.json"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    page.goto(f"file://{tmp_path / 'compared'}/run.html")
    page.wait_for_selector("#compared tr")
    found = compare.compare(report, other, ("report.json", "fewer-report.json"))
    assert page.locator("#compared-about").inner_text().startswith("fewer-report.json against report.json (B - A)")
    shown = {row[0]: row for row in table_rows(page, "#compared")}
    assert set(shown) == set(found["measures"]) == {"AP", "AP50", "AP75"}
    for name, row in found["measures"].items():
        said = compare.verdict(name, row, ("report.json", "fewer-report.json"))
        assert shown[name] == [name, *(figure(row[k]) for k in ("difference", "low", "high", "p")), said]
    assert errors == []


def test_a_label_map_run_s_confusions_open_their_images(browser, tiny_build: Path, tmp_path: Path) -> None:
    """The confusions of a label-map run are the matrix its figures come from (each class's IoU
    again from the cells), and a cell opens exactly the images whose maps confuse so, recounted
    from the maps and the truth."""
    release = tiny_build / TINY_RELEASE
    banded_label_maps(release, tmp_path / "maps")
    report = scored_site(release, tmp_path / "maps", "semantic", tmp_path)
    run = site_data(tmp_path / "site", "run.js", "run")
    labels, cells = run["confusion"]["labels"], run["confusion"]["cells"]
    assert [c[:3] for c in cells] == report["confusion"]["cells"] and labels == report["confusion"]["labels"]
    matrix = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for t, p, n, _ in cells:
        matrix[t, p] = n
    rows = [k for k, name in enumerate(labels) if name != "(none)"]
    for k in rows:
        union = matrix[k].sum() + matrix[:, k].sum() - matrix[k, k]
        if union:
            assert matrix[k, k] / union == pytest.approx(report["per_class_iou"][labels[k]], abs=1e-12)
    assert np.trace(matrix) / matrix.sum() == pytest.approx(report["measures"]["pixel_accuracy"], abs=1e-12)
    # each image's confusions, from the maps and the truth (a value no label has where it is silent)
    data = regionbench.load(release)
    name_of = dict(zip(data.vocabulary["label_id"].astype(int), data.vocabulary["label"], strict=True))
    truth_label_maps(release, tmp_path / "truth", ignore=65535)
    confusing: dict[tuple[str, str], set[int]] = {}
    for image_id in report["per_image"]:
        truth = np.asarray(Image.open(tmp_path / "truth" / f"{image_id}.png")).astype(np.int64)
        said = np.asarray(Image.open(tmp_path / "maps" / f"{image_id}.png")).astype(np.int64)
        keep = truth != 65535
        for t, p in set(zip(truth[keep].tolist(), said[keep].tolist(), strict=True)):
            if t != p:
                confusing.setdefault((name_of[t], name_of.get(p, "(none)")), set()).add(int(image_id))
    linked = {(labels[t], labels[p]): k for t, p, _, k in cells if k is not None}
    assert set(linked) == {pair for pair in confusing if pair[1] != "(none)"}
    errors: list[str] = []
    page = open_page(browser, f"file://{tmp_path / 'site'}/run.html", errors)
    page.wait_for_selector("table.matrix")
    screenshot(page, "view-confusions.png", tmp_path)
    pair = max(linked, key=lambda p: (len(confusing[p]), p))
    page.click(f'a[data-cell="{linked[pair]}"]')
    page.wait_for_selector("body[data-indexed]")
    ids = sorted(int(t) for t in page.locator(".tile").evaluate_all("ts => ts.map(t => t.dataset.id)"))
    assert ids == sorted(confusing[pair])
    assert f"says {pair[1]} of {pair[0]}" in page.inner_text("#cell-note")
    assert errors == []


def test_an_image_walks_the_filtered_order_zooms_and_takes_keys(browser, tiny_build: Path, tmp_path: Path) -> None:
    """From the index filtered by a label, an image's previous and next are its neighbours in that
    order (links, and the arrow keys), Escape goes back to the index with its filter; + zooms,
    0 fits; the grid takes as many columns as the window holds."""
    site = tmp_path / "site"
    done = view(str(tiny_build / TINY_RELEASE), "--out", str(site))
    assert done.returncode == 0, done.stderr
    errors: list[str] = []
    page = open_page(browser, f"file://{site}/index.html", errors)
    page.wait_for_selector(".tile")
    columns = lambda: page.locator(".tile").evaluate_all(  # noqa: E731
        "ts => new Set(ts.map(t => t.getBoundingClientRect().top)).size ? "
        "ts.filter(t => t.getBoundingClientRect().top === ts[0].getBoundingClientRect().top).length : 0"
    )
    wide = columns()
    page.set_viewport_size({"width": 600, "height": 900})
    assert 0 < columns() < wide
    page.set_viewport_size({"width": 1200, "height": 900})
    options = page.locator("#label option").all_inner_texts()
    busiest = max(options[1:], key=lambda o: int(o.rsplit("(", 1)[1].rstrip(")")))
    page.select_option("#label", label=busiest)
    order = page.locator(".tile").evaluate_all("ts => ts.map(t => t.dataset.id)")
    assert len(order) >= 3 and "label=" in page.url  # the filter is in the address
    page.locator(".tile").nth(1).click()
    page.wait_for_selector("body[data-neighbours]")
    assert page.inner_text("#place") == f"2 of {len(order)}"
    assert f"id={order[0]}&" in page.get_attribute("#previous", "href") + "&"
    page.keyboard.press("ArrowRight")
    page.wait_for_url(re.compile(rf"id={order[2]}\b"))
    page.wait_for_selector("body[data-neighbours]")
    assert page.inner_text("#place") == f"3 of {len(order)}"
    page.keyboard.press("+")
    assert page.get_attribute("#viewport", "data-scale") == "1.25"
    page.keyboard.press("0")
    assert page.get_attribute("#viewport", "data-scale") == "1"
    screenshot(page, "view-image.png", tmp_path)
    page.keyboard.press("Escape")
    page.wait_for_selector(".tile")
    assert page.locator(".tile").evaluate_all("ts => ts.map(t => t.dataset.id)") == order
    screenshot(page, "view-index.png", tmp_path)
    assert errors == []


def test_a_label_free_release_with_a_segments_run(browser, release: Callable[[str], Built], tmp_path: Path) -> None:
    """A generated BSDS500 release and one human's segmentations as a run against another, on
    every image (the tree has train and val, no test: val would be the default side): the run
    page gives the report's covering, PRI and VI beside the humans'; an image draws the run's
    segments; no console error."""
    built = release("bsds")
    raw, folder = built.raw, built.folder
    run = tmp_path / "segs"
    run.mkdir()
    for path in (raw / "data/groundTruth").glob("*/*.mat"):  # human 2's map as the run
        cell = scipy.io.loadmat(path)["groundTruth"]
        segs = np.empty((1, 1), dtype=object)
        segs[0, 0] = cell[0, 1]["Segmentation"][0, 0]
        scipy.io.savemat(run / path.name, {"segs": segs})
    report = evaluate(folder, run, "segments", tmp_path / "report.json", "--annotator", "human-1", "--split", "all")
    site = tmp_path / "site"
    done = view(str(folder), "--out", str(site), "--images", str(raw), "--run", str(tmp_path / "report.json"),
                "--predictions", str(run))  # fmt: skip
    assert done.returncode == 0, done.stderr
    errors: list[str] = []
    page = open_page(browser, f"file://{site}/run.html", errors)
    page.wait_for_selector("#headline tr")
    shown = {row[0]: row[1:] for row in table_rows(page, "#headline")}
    for measure, values in report["measures"].items():
        for name, value in values.items():
            if isinstance(value, float):
                around = report["intervals"].get(f"{measure}.{name}")
                bounds = f" [{figure(around['low'])}, {figure(around['high'])}]" if around else ""
                assert shown[f"{measure} {name}".replace("_", " ")][0] == figure(value) + bounds
    for measure in ("covering", "pri", "vi"):  # the humans beside the run: BSDS's one figure at ODS and OIS
        human = figure(report["human_ceiling"][measure])
        assert shown[f"{measure} ods"][1] == shown[f"{measure} ois"][1] == human
    assert shown["covering best"][1] == ""
    screenshot(page, "view-segments-page.png", tmp_path)
    page.goto(f"file://{site}/image.html?id=21")
    page.wait_for_selector("#outlines g.run path")
    drawn = image_data(site, 21)["drawn"]
    assert page.locator("#outlines g.run path").count() == sum(bool(s["path"]) for s in drawn) > 1
    screenshot(page, "view-segments.png", tmp_path)
    assert errors == []

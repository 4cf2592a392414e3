"""The build's baselines stage: the reference methods of a release's kind, scored through the
evaluate door on the assembled release, published in its results and tabled in its card and site."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import open_page, view
from farm import Built

import regionbench
from regionbench.release.card import baseline_table
from regionbench.scoring import tasks


def _card_rows(folder: Path) -> dict[str, list[str]]:
    """The card's reference-method table: method -> its cells, the header under "method"."""
    card = (folder / "README.md").read_text(encoding="utf-8")
    start = card.index("Reference methods, scored by `regionbench evaluate`")
    rows = [line for line in card[start:].split("\n\n", 2)[1].splitlines() if line.startswith("| ")]
    return {cells[0]: cells[1:] for cells in ([c.strip() for c in row.strip("|").split("|")] for row in rows)}


def test_a_bsds500_release_tables_its_methods_beside_the_humans(release: Callable[[str], Built]) -> None:
    """BSDS500's five benchmark images: the card holds the Human row (boundary F 0.80, as BSDS500
    published it) and the Canny and Felzenszwalb-Huttenlocher rows; each released report is
    what evaluate gives the predictions the stage wrote, scored against the published release."""
    built = release("bsds-bench")
    rows = _card_rows(built.folder)
    assert list(rows)[:4] == ["method", "Human", "canny", "felzenszwalb"], rows
    header = rows["method"]
    assert round(float(rows["Human"][header.index("boundary F ODS")]), 2) == 0.80
    assert rows["canny"][header.index("covering ODS")] == ""  # edges: no regions to cover
    data = regionbench.load(built.folder)
    stage = built.results / "baselines"
    for name, task in (("canny", "boundaries"), ("felzenszwalb", "segments"), ("felzenszwalb", "boundaries")):
        released = json.loads((built.folder / "results" / "baselines" / name / f"{task}.json").read_text())
        again = tasks.evaluate(data, stage / name / "predictions", task)
        assert tasks.measures(again) == tasks.measures(released)
        assert released["baseline"]["name"] == name and released["release"]["version"] == data.version
    assert baseline_table(built.folder / "results" / "baselines")[1][0][0] == "Human"
    assert not (built.folder / "results" / "baselines" / "canny" / "predictions").exists()  # reports only


def test_label_map_releases_hold_the_pixel_classifier_scored_by_their_protocol(
    release: Callable[[str], Built],
) -> None:
    """VOC and Cityscapes (baselines: auto): the learnt pixel classifier's row, scored on the
    source's evaluation split by the benchmark's own protocol (Cityscapes: iIoU and category IoU
    too). Cityscapes names its things: their components are scored as instances and with the
    stuff as panoptic segments; VOC names none, so it has its label maps' figures alone."""
    for name, method, extra in (("voc", "voc", None), ("cityscapes", "cityscapes", "iIoU")):
        built = release(name)
        reports = built.folder / "results" / "baselines" / "pixels"
        report = json.loads((reports / "semantic.json").read_text())
        assert report["settings"]["method"] == method and report["split"] == "source"
        rows = _card_rows(built.folder)
        assert "pixels" in rows and "mIoU" in rows["method"], rows
        around = report["intervals"]["miou"]  # the card shows the figure with its interval
        assert rows["pixels"][rows["method"].index("mIoU")] == (
            f"{report['measures']['miou']:.4f} [{around['low']:.4f}, {around['high']:.4f}]"
        )
        assert (extra is not None) == (reports / "panoptic.json").is_file() == (reports / "instances.json").is_file()
        if extra:
            assert rows["pixels"][rows["method"].index(extra)] != ""
            assert {"PQ", "PQ things", "mask AP"} <= set(rows["method"])


def test_a_panoptic_release_s_things_are_scored_as_a_user_s_panoptic_and_instance_runs(
    release: Callable[[str], Built],
) -> None:
    """COCO panoptic (things and stuff): the released panoptic and instance reports are what
    evaluate gives the files the stage wrote (its PNGs and JSON, its results JSON)."""
    built = release("panoptic-coco")
    data = regionbench.load(built.folder)
    stage = built.results / "baselines" / "pixels"
    for task, predictions in (("panoptic", stage / "panoptic"), ("instances", stage / "instances" / "results.json")):
        released = json.loads((built.folder / "results" / "baselines" / "pixels" / f"{task}.json").read_text())
        again = tasks.evaluate(data, predictions, task, split=released["settings"]["split"])
        assert tasks.measures(again) == tasks.measures(released)
    rows = _card_rows(built.folder)
    assert rows["pixels"][rows["method"].index("PQ")].startswith(f"{released_pq(built):.4f} [")


def released_pq(built: Built) -> float:
    report = json.loads((built.folder / "results" / "baselines" / "pixels" / "panoptic.json").read_text())
    return float(report["measures"]["all"]["pq"])


@pytest.mark.browser
def test_the_site_shows_the_card_s_table_of_methods(browser, release: Callable[[str], Built], tmp_path: Path) -> None:
    """`regionbench view` of the BSDS500 release: the index's card section holds the methods'
    table as the card has it, the humans first, with no console error."""
    built = release("bsds-bench")
    done = view(str(built.folder), "--out", str(tmp_path / "site"), "--images", str(built.raw))
    assert done.returncode == 0, done.stderr
    errors: list[str] = []
    page = open_page(browser, f"file://{tmp_path / 'site'}/index.html", errors)
    page.wait_for_selector("#baselines tbody tr")
    shown = [row.split("\t") for row in page.locator("#baselines tbody tr").all_inner_texts()]
    header, rows = baseline_table(built.folder / "results" / "baselines")
    assert page.locator("#baselines thead th").all_inner_texts() == header
    assert [r[0] for r in shown] == [r[0] for r in rows] == ["Human", "canny", "felzenszwalb"]
    assert shown[0][header.index("boundary F ODS")] == f"{rows[0][header.index('boundary F ODS')]:.4f}"
    assert errors == []


def test_a_method_that_cannot_run_is_skipped_and_the_release_published(release: Callable[[str], Built]) -> None:
    """COCO panoptic as panopticapi's sample ships it (val2017 alone): the pixel classifier has no
    train side to fit on. The build publishes; the summary and the card say, in one line each, that
    it did not run and why, and the release carries no report of it."""
    built = release("panoptic-coco-val")
    line = "reference method pixels: not run (the release has no image outside the scored side to fit on)"
    assert line in built.stdout, built.stdout[-2000:]
    card = (built.folder / "README.md").read_text(encoding="utf-8")
    assert "Reference methods not run on this release: pixels (the release has no image outside" in card
    assert "Reference methods, scored by" not in card  # no method ran: no table
    released = sorted(p.name for p in (built.folder / "results" / "baselines" / "pixels").iterdir())
    assert released == ["skipped.json"]
